package testenv

import (
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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

// SecuredServer is an embedded JetStream server started from the shipped
// deploy/nats/nats-server.conf, with its users and permissions.
type SecuredServer struct {
	*natsserver.Server
	passwords map[string]string
}

// securedUsers are the shipped configuration's users, by the environment
// variable that holds each one's password.
var securedUsers = map[string]string{
	"worker":      "ONCELEDGER_NATS_WORKER_PASSWORD",
	"admin":       "ONCELEDGER_NATS_ADMIN_PASSWORD",
	"acme":        "ONCELEDGER_NATS_ACME_PASSWORD",
	"acme-events": "ONCELEDGER_NATS_ACME_EVENTS_PASSWORD",
}

// securedPassword is user's password in every secured server of the
// process. Characters a URL must escape prove the escaping works.
func securedPassword(user string) string { return user + "-p@ss:/w0rd" }

// securedEnv sets the passwords the shipped configuration reads from the
// environment, once for the process: they are the same for every server,
// so tests that start one may run in parallel.
var securedEnv = sync.OnceValue(func() error {
	for user, env := range securedUsers {
		if err := os.Setenv(env, securedPassword(user)); err != nil {
			return err
		}
	}
	return nil
})

// SecuredNATS starts a server from the shipped configuration for this test,
// stopped when it ends. The configuration reads its passwords from the
// environment, which SecuredNATS sets for the whole process (the same
// passwords for every server).
func SecuredNATS(t testing.TB) *SecuredServer {
	t.Helper()
	if err := securedEnv(); err != nil {
		t.Fatalf("testenv: set the shipped configuration's passwords: %v", err)
	}
	s := &SecuredServer{passwords: map[string]string{}}
	for user := range securedUsers {
		s.passwords[user] = securedPassword(user)
	}
	srv, err := natsserver.Start(natsserver.Config{StoreDir: t.TempDir(), ConfigFile: ShippedNATSConfig()})
	if err != nil {
		t.Fatalf("testenv: start NATS with the shipped configuration: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	s.Server = srv
	return s
}

// Password is user's password.
func (s *SecuredServer) Password(user string) string {
	pw, ok := s.passwords[user]
	if !ok {
		panic("testenv: the shipped NATS configuration has no user " + user)
	}
	return pw
}

// URL is the server's URL with user's credentials in it, as NATS_URL
// carries them.
func (s *SecuredServer) URL(user string) string {
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		panic(err)
	}
	u.User = url.UserPassword(user, s.Password(user))
	return u.String()
}

// ShippedNATSConfig is the path of deploy/nats/nats-server.conf.
func ShippedNATSConfig() string {
	return filepath.Join(ModuleRoot(), "deploy", "nats", "nats-server.conf")
}

// ModuleRoot is the directory of the module's go.mod: found from this
// source file's path, or, when the build trimmed paths (-trimpath), up
// from the working directory, which is a package's directory in a test.
// Empty when neither leads to it.
func ModuleRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/onceledger/onceledger\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
