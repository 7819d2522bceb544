package pgcluster_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/pgcluster"
)

func TestStartStopRestartKeepsData(t *testing.T) {
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dir := filepath.Join(tempDir(t), "data")
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))

	first := freePort(t)
	c := start(ctx, t, pgcluster.Config{Dir: dir, FirstPort: first, Logger: logger})
	if c.Port != first {
		t.Fatalf("cluster port = %d, want the free FirstPort %d", c.Port, first)
	}
	wantURL := "postgres://postgres@127.0.0.1:" + strconv.Itoa(c.Port) + "/postgres?sslmode=disable"
	if got := c.URL("postgres"); got != wantURL {
		t.Fatalf("URL = %q, want %q", got, wantURL)
	}

	mustExec(ctx, t, c.URL("postgres"), "SELECT 1")
	mustExec(ctx, t, c.URL("postgres"), "CREATE TABLE survivor (id int PRIMARY KEY)")
	mustExec(ctx, t, c.URL("postgres"), "INSERT INTO survivor VALUES (42)")

	assertSetting(ctx, t, c.URL("postgres"), "fsync", "on")
	assertSetting(ctx, t, c.URL("postgres"), "listen_addresses", "127.0.0.1")
	assertSetting(ctx, t, c.URL("postgres"), "max_connections", "200")

	// A second Start on the same running directory adopts the server.
	again := start(ctx, t, pgcluster.Config{Dir: dir})
	if again.Port != c.Port {
		t.Fatalf("adopted cluster port = %d, want %d", again.Port, c.Port)
	}

	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("second Stop should be a no-op: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid still present after Stop (err=%v)", err)
	}

	restarted := start(ctx, t, pgcluster.Config{Dir: dir, FirstPort: first, Fast: true})
	if restarted.Port != first {
		t.Fatalf("restarted cluster port = %d, want %d again", restarted.Port, first)
	}
	var id int
	if err := queryRow(ctx, t, restarted.URL("postgres"), "SELECT id FROM survivor", &id); err != nil {
		t.Fatalf("data did not survive restart: %v", err)
	}
	if id != 42 {
		t.Fatalf("survivor id = %d, want 42", id)
	}
	assertSetting(ctx, t, restarted.URL("postgres"), "fsync", "off")
	assertSetting(ctx, t, restarted.URL("postgres"), "synchronous_commit", "off")
	assertSetting(ctx, t, restarted.URL("postgres"), "full_page_writes", "off")
}

func TestStartRejectsForeignDirectory(t *testing.T) {
	requireBinaries(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a cluster"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := pgcluster.Start(context.Background(), pgcluster.Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Start on a non-empty foreign dir: err = %v, want a 'not empty' error", err)
	}
}

// A data dir under a directory the server account cannot enter, like a
// 0700 home directory when running as root, is refused; the directory's
// mode is left as it was either way.
func TestStartChangesNoPermissions(t *testing.T) {
	requireBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	home := filepath.Join(tempDir(t), "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(home, ".cache", "data"), Fast: true})
	if os.Geteuid() == 0 {
		if err == nil {
			c.Stop(ctx)
			t.Fatal("Start as root under a 0700 directory succeeded; it must have changed a permission")
		}
		if !strings.Contains(err.Error(), home) || !strings.Contains(err.Error(), "changes no permissions") {
			t.Errorf("error does not say which directory blocks: %v", err)
		}
	} else {
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	fi, err := os.Stat(home)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Fatalf("mode of %s = %04o, want 0700 as it was", home, got)
	}
}

// requireBinaries fails the test, saying what is missing, when there are no
// server binaries to start a cluster with. These tests start clusters of
// their own, so DATABASE_URL cannot stand in for them as it does elsewhere.
func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := pgcluster.Find(); err != nil {
		t.Fatalf("the tests of pgcluster start PostgreSQL clusters and need its server binaries, DATABASE_URL or not: %v", err)
	}
}

// tempDir is t.TempDir for data dirs: t.TempDir's 0700 directories would
// keep the server account out when the tests run as root.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := pgcluster.MkdirTemp("pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func start(ctx context.Context, t *testing.T, cfg pgcluster.Config) *pgcluster.Cluster {
	t.Helper()
	c, err := pgcluster.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	return c
}

func mustExec(ctx context.Context, t *testing.T, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryRow(ctx context.Context, t *testing.T, dsn, sql string, dest ...any) error {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest...)
}

func assertSetting(ctx context.Context, t *testing.T, dsn, name, want string) {
	t.Helper()
	var got string
	if err := queryRow(ctx, t, dsn, "SHOW "+name, &got); err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	if got != want {
		t.Fatalf("%s = %q, want %q", name, got, want)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
