package throwaway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/pgcluster"
)

// ownerFile holds a work directory's OwnerMark. Before the mark named the
// host, the tests and the chaos suite wrote a bare pid to owner.pid: those
// are read too, as this host's.
var ownerFiles = []string{"owner", "owner.pid"}

// OwnerMark names this host and process, for a work directory or a
// database's comment.
func OwnerMark() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("onceledger host=%s pid=%d", host, os.Getpid())
}

// Orphaned reports whether mark (an OwnerMark, or a bare pid) names a
// process of this host that no longer exists.
func Orphaned(mark string) bool {
	host, _ := os.Hostname()
	h, pid := "", 0
	if n, err := strconv.Atoi(strings.TrimSpace(mark)); err == nil {
		h, pid = host, n
	}
	for f := range strings.FieldsSeq(mark) {
		if v, ok := strings.CutPrefix(f, "host="); ok {
			h = v
		} else if v, ok := strings.CutPrefix(f, "pid="); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if h != host || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// MkdirOwned creates a temporary directory named prefix and a random
// suffix, fit to hold a cluster's data dir (pgcluster.MkdirTemp), and marks
// it as this process's before anything goes in it.
func MkdirOwned(prefix string) (string, error) {
	dir, err := pgcluster.MkdirTemp(prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFiles[0]), []byte(OwnerMark()), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("mark %s: %w", dir, err)
	}
	return dir, nil
}

// ReapDirs removes the directories MkdirOwned made with prefix whose owner
// died, stopping first the cluster running in any of their
// subdirectories. What cannot be removed is logged and left.
func ReapDirs(ctx context.Context, prefix string, logger *slog.Logger) {
	if logger == nil {
		logger = slog.Default()
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, dir := range dirs {
		if !orphanedDir(dir) {
			continue
		}
		if err := reapDir(ctx, dir); err != nil {
			logger.Warn("could not clean up an orphaned work directory", "dir", dir, "error", err)
		}
	}
}

func orphanedDir(dir string) bool {
	for _, name := range ownerFiles {
		if mark, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return Orphaned(string(mark))
		}
	}
	return false // not a work dir, or one being created
}

func reapDir(ctx context.Context, dir string) error {
	pids, _ := filepath.Glob(filepath.Join(dir, "*", "postmaster.pid"))
	for _, pid := range pids {
		// Start adopts the running server, which gives a handle to stop it.
		c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Dir(pid)})
		if err != nil {
			return fmt.Errorf("adopt cluster: %w", err)
		}
		if err := c.Stop(ctx); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}

// ReapDatabases drops the databases on the server at adminURL whose name
// starts with prefix and whose comment is the OwnerMark of a process that
// died. A server that cannot be reached is left for the caller to report.
func ReapDatabases(ctx context.Context, adminURL, prefix string, logger *slog.Logger) {
	if logger == nil {
		logger = slog.Default()
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE starts_with(datname, $1)`, prefix)
	if err != nil {
		return
	}
	var orphans []string
	for rows.Next() {
		var name, comment string
		if rows.Scan(&name, &comment) == nil && Orphaned(comment) {
			orphans = append(orphans, name)
		}
	}
	rows.Close()
	for _, name := range orphans {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			logger.Warn("could not drop an orphaned database", "database", name, "error", err)
		}
	}
}
