// Package testenv gives integration tests real infrastructure: a fresh
// PostgreSQL database per test and an embedded NATS JetStream server per
// test. There are no mocks and nothing is skipped: when the infrastructure
// cannot be had, the test fails with a message saying how to provide it.
//
// PostgreSQL comes from DATABASE_URL when it is set; otherwise one throwaway
// cluster (see pgcluster) is started per test binary on first use. Either way
// each test gets its own newly created database, dropped when the test ends,
// so parallel tests never see each other's data. The database DATABASE_URL
// names (often the maintenance database "postgres") is only connected to,
// to create and drop those; nothing is written to it. PostgresWith additionally
// runs a preparation step (typically migrations) once per test binary on a
// template database and clones it for each test, which is much faster than
// migrating every database.
//
// Packages that use Postgres or PostgresWith must call Main from TestMain:
// it stops the throwaway cluster, drops template databases and removes
// temporary directories when the tests finish, also on SIGINT/SIGTERM. A
// binary killed outright (SIGKILL, or a -timeout panic) cannot clean up; the
// next binary that starts a throwaway cluster stops and removes such orphans.
// Databases an orphan left on a DATABASE_URL server are not reclaimed.
//
// SystemNATS runs the nats-server on PATH, the one an operating system
// packages, for tests that must hold on older servers too. It is the one
// optional piece: without the binary it says so, and the caller logs what
// did not run rather than failing or skipping silently.
package testenv
