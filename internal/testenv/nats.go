package testenv

import (
	"testing"

	"github.com/onceledger/onceledger/internal/natsserver"
)

// NATS starts an embedded JetStream server for this test, stopped when the
// test ends, and returns its client URL.
func NATS(t testing.TB) string {
	t.Helper()
	return NATSServer(t).ClientURL()
}

// NATSServer is NATS for tests that need to stop or restart the server
// themselves; natsserver.Start(srv.Config()) brings it back on the same port and store.
// The original server is still shut down at cleanup (a no-op if the test
// already did); a restarted one is the test's to stop.
func NATSServer(t testing.TB) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Config{StoreDir: t.TempDir(), ServerName: "testenv"})
	if err != nil {
		t.Fatalf("testenv: start embedded NATS: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}
