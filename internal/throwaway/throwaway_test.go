package throwaway

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/pgcluster"
)

// deadPID is the pid of a process that has exited: free until reused,
// which the next moments make unlikely to matter.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestOrphaned(t *testing.T) {
	host, _ := os.Hostname()
	dead := deadPID(t)
	for _, c := range []struct {
		mark string
		want bool
	}{
		{OwnerMark(), false}, // this process
		{fmt.Sprintf("onceledger host=%s pid=%d", host, dead), true},
		{fmt.Sprintf("onceledger bench host=%s pid=%d", host, dead), true}, // the benchmark's older mark
		{fmt.Sprint(dead), true}, // a bare pid: this host's
		{fmt.Sprintf("onceledger host=%s-elsewhere pid=%d", host, dead), false},
		{fmt.Sprintf("onceledger host=%s pid=1", host), false}, // alive
		{"", false},
		{"made by hand", false},
	} {
		if got := Orphaned(c.mark); got != c.want {
			t.Errorf("Orphaned(%q) = %v, want %v", c.mark, got, c.want)
		}
	}
}

// TestReapDirs removes a dead owner's directory and leaves a live one's
// and an unmarked one.
func TestReapDirs(t *testing.T) {
	prefix := "onceledger-throwaway-test-" + fmt.Sprint(os.Getpid()) + "-"
	mine, err := MkdirOwned(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(mine) })
	dead, err := MkdirOwned(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dead) })
	if err := os.WriteFile(filepath.Join(dead, "owner"), fmt.Appendf(nil, "onceledger host=%s pid=%d", hostname(), deadPID(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	unmarked, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(unmarked) })

	ReapDirs(context.Background(), prefix, nil)
	for dir, kept := range map[string]bool{mine: true, dead: false, unmarked: true} {
		if _, err := os.Stat(dir); (err == nil) != kept {
			t.Errorf("%s: stat after ReapDirs = %v, want kept %v", dir, err, kept)
		}
	}
}

func hostname() string { h, _ := os.Hostname(); return h }

func TestWithDatabase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgresql://u:p%40ss@db:5432?sslmode=require", "postgresql://u:p%40ss@db:5432/x?sslmode=require"},
		{"host=127.0.0.1 user=postgres dbname=test", "host=127.0.0.1 user=postgres dbname=test dbname=x"},
	} {
		if got := WithDatabase(c.in, "x"); got != c.want {
			t.Errorf("WithDatabase(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactHidesPassword(t *testing.T) {
	if got := Redact("postgres://u:secret@h/db?password=secret"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("got %q", got)
	}
	if got := Redact("host=h password=secret"); got != "(keyword/value DSN)" {
		t.Errorf("got %q", got)
	}
}

// TestPostgresAndReapDatabases gets a server the way everything does —
// DATABASE_URL's, else a cluster of its own — and checks that only a dead
// owner's databases are reaped.
func TestPostgresAndReapDatabases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := MkdirOwned("onceledger-throwaway-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := Postgres(ctx, Config{URL: os.Getenv("DATABASE_URL"), Cluster: pgcluster.Config{Dir: filepath.Join(dir, "pg"), Fast: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	prefix := fmt.Sprintf("onceledger_throwaway_%d_", os.Getpid())
	names := map[string]string{
		prefix + "mine":     OwnerMark(),
		prefix + "dead":     fmt.Sprintf("onceledger host=%s pid=%d", hostname(), deadPID(t)),
		prefix + "unmarked": "",
	}
	for name, mark := range names {
		if err := srv.CreateDatabase(ctx, name, mark); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.DropDatabase(context.Background(), name); err != nil {
				t.Error(err)
			}
		})
	}
	ReapDatabases(ctx, srv.AdminURL, prefix, nil)

	var left []string
	if err := srv.Admin(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname`, prefix)
		if err != nil {
			return err
		}
		left, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{prefix + "mine", prefix + "unmarked"}; !slices.Equal(left, want) {
		t.Errorf("databases after ReapDatabases = %v, want %v", left, want)
	}
	// Each database answers at the URL the server gives for it.
	conn, err := pgx.Connect(ctx, srv.URL(prefix+"mine"))
	if err != nil {
		t.Fatal(err)
	}
	var db string
	err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	conn.Close(ctx)
	if err != nil || db != prefix+"mine" {
		t.Errorf("current_database() at URL = %q, %v", db, err)
	}
}

// TestReapDirsStopsTheCluster stops the cluster a dead owner left running
// before removing its directory.
func TestReapDirsStopsTheCluster(t *testing.T) {
	if _, err := pgcluster.Find(); err != nil {
		t.Fatalf("this test starts a cluster: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := "onceledger-throwaway-test-" + fmt.Sprint(os.Getpid()) + "-"
	dir, err := MkdirOwned(prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(dir, "pg"), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) }) // in case the reaping fails
	if err := os.WriteFile(filepath.Join(dir, "owner"), fmt.Appendf(nil, "onceledger host=%s pid=%d", hostname(), deadPID(t)), 0o600); err != nil {
		t.Fatal(err)
	}

	ReapDirs(ctx, prefix, nil)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after ReapDirs: %v, want removed", dir, err)
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err == nil {
		conn.Close(ctx)
		t.Error("the orphan's cluster still accepts connections")
	}
}
