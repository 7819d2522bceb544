// Package scaleout holds the scale-out test: three `onceledger run`
// processes on one durable consumer and one database, against a three-node
// NATS JetStream cluster with replicated (R3) streams, all real processes on
// 127.0.0.1. While commands (and retries of them) flow, one worker and one
// NATS node are killed with SIGKILL; the test then requires every command
// to have exactly one effect, no command to be lost, gapless numbers, and
// an audit without violations.
package scaleout
