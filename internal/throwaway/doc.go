// Package throwaway gives what runs onceledger against real servers — the
// tests, the benchmark, the chaos suite and `onceledger dev` — its
// PostgreSQL server, and cleans up after runs that died.
//
// Postgres uses the server DATABASE_URL names when it is set, and starts a
// local cluster (package pgcluster) when it is not; without the PostgreSQL
// server binaries it says so rather than guessing. The caller creates its
// databases on the server and decides what survives it: the tests clone a
// template and drop the clones, the benchmark drops its database, dev
// keeps its data dir.
//
// A started cluster is a daemon: it outlives a process killed before it
// could stop it. MkdirOwned marks a work directory, and OwnerMark a
// database, with this host and process; ReapDirs and ReapDatabases remove
// what is marked with a process of this host that no longer exists,
// stopping the clusters in those directories first. Anything else — a live
// run's, another host's, or unmarked — is left alone.
//
// JetStream needs no such care: package natsserver embeds the server in
// the process, which takes it down when it exits.
package throwaway
