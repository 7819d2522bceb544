// Package pgcluster starts and stops a throwaway, local PostgreSQL cluster
// using the server binaries installed on the machine (initdb and pg_ctl),
// so that tests and local runs get a real PostgreSQL without depending on a
// system-wide instance.
//
// Guarantees:
//   - The cluster listens on 127.0.0.1 only, over TCP, and creates no
//     Unix-domain socket, so it never collides with a system cluster's socket
//     or port (a free port is picked when none is given).
//   - Authentication is trust and the superuser is always "postgres".
//   - fsync stays on unless Config.Fast asks otherwise: losing committed
//     ledger data on a crash is never the default.
//   - Start returns only once the server accepts connections; an existing data
//     directory is reused, and an already running cluster on it is adopted
//     rather than started twice.
//   - PostgreSQL refuses to run as root. When the process is root, the cluster
//     runs as the system user "postgres": the data directory (and parents
//     Start created) are handed to that user. The permissions of directories
//     Start did not create are never changed: a data directory that user
//     cannot reach (say, under a 0700 home directory) is refused with an
//     error saying which directory blocks it. MkdirTemp makes a temporary
//     directory the server can reach.
//   - With Config.FirstPort, a restarted cluster gets the same port back
//     unless something else took it in the meantime.
//   - Errors name what is missing and how to fix it, including the DATABASE_URL
//     alternative when the binaries are not installed.
package pgcluster
