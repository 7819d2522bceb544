// Package cells partitions companies over several databases: a cell is a
// Postgres database with the workers that serve it, and every company
// belongs to exactly one cell, the one serving the company's partition.
//
// The partition of a company is NATS's own: the command stream's subject
// transform rewrites ledger.cmd.<company>.<command> to
// ledger.cmd.P.<partition>.<company>.<command> with the server's
// partition(n, …) mapping function, and each cell's durable consumer filters
// the partitions the cell serves. Partition computes the same function in
// Go (FNV-1a over the company token, modulo the partition count), for what
// is not a stream message: the result lookup, the tools. The server and Go
// agree by construction and by test (against the embedded server); a
// company's partition depends on its id and the partition count only, so it
// never changes by accident. Changing the partition count moves companies:
// it is not an operation this package offers.
//
// The placement, which cells exist, which partitions each serves and its
// database, is one JSON document under one key of a NATS KV bucket
// (Bucket, PlacementKey): every worker and tool reads the same one, and a
// change of it (a partition moving to another cell) is one atomic write
// checked against the revision it was read at. A placement is valid only
// if every partition is served by exactly one cell (Validate); a worker
// refuses to start on any other.
//
// Without a placement, nothing of this applies: one database, one durable
// consumer, subjects as published.
package cells
