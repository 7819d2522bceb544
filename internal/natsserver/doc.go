// Package natsserver runs a real NATS server with JetStream inside the
// current process, for tests and for single-binary local setups that must
// not depend on an externally managed broker.
//
// Guarantees:
//   - Start returns only once the server accepts client connections and
//     JetStream is enabled, or fails within 10 seconds with the reason.
//   - It listens on 127.0.0.1 unless told otherwise; port 0 picks a free port.
//   - A fixed port that is already taken is reported as such, naming the port,
//     instead of a timeout.
//   - JetStream data lives in Config.StoreDir, so a server restarted on the
//     same directory sees the same streams and messages.
//   - Server logs go to the given slog.Logger, or nowhere; the process is
//     never exited by the server (its fatal errors become Start errors).
package natsserver
