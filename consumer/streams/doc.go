// Package streams provisions what the worker consumes from: the command
// stream, the dead-letter stream and the durable pull consumer the workers
// share, and checks the nats-server they live on.
//
// Invariants:
//   - the command stream never keeps a message longer than the inbox
//     remembers its key (Config.Validate, and Provision checks the live
//     stream again, which an operator may have changed out of band): a
//     redelivery older than the retention would execute again;
//   - retries back off through the worker's NAK delays, never through the
//     consumer's BackOff list;
//   - the worker runs only against a nats-server of MinServerVersion or
//     newer, and terminates with a reason only where the server honours one
//     (TermWithReason).
package streams
