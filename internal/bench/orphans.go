package bench

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
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/pgcluster"
)

// A run that is killed (SIGKILL, a test binary's -timeout) cannot clean up
// after itself. It leaves its owner, host and pid, on its work directory
// and on its database, and the next run on the same host removes what
// belongs to a process that no longer exists. Anything else, a live run's
// or another host's, is left alone.
const (
	workDirPrefix = "onceledger-bench-"
	ownerFile     = "owner"
	dbPrefix      = "onceledger_bench_"
)

func ownerComment() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("onceledger bench host=%s pid=%d", host, os.Getpid())
}

// orphanedBy reports whether an owner comment names a dead process of this
// host.
func orphanedBy(comment string) bool {
	host, _ := os.Hostname()
	var h string
	var pid int
	for f := range strings.FieldsSeq(comment) {
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

func newWorkDir() (string, error) {
	dir, err := pgcluster.MkdirTemp(workDirPrefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(ownerComment()), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func reapOrphans(ctx context.Context, adminDSN string, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), workDirPrefix+"*"))
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil || !orphanedBy(string(owner)) {
			continue
		}
		pg := filepath.Join(dir, "pg")
		if _, err := os.Stat(filepath.Join(pg, "postmaster.pid")); err == nil {
			// Start adopts a running server, which gives a handle to stop it.
			if c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: pg}); err == nil {
				err = c.Stop(ctx)
			}
			if err != nil {
				logger.Warn("bench: could not stop an orphaned cluster", "dir", pg, "error", err)
				continue
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			logger.Warn("bench: could not remove an orphaned work directory", "dir", dir, "error", err)
		}
	}
	if adminDSN == "" {
		return
	}
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return // the run reports it when it connects itself
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE starts_with(datname, $1)`, dbPrefix)
	if err != nil {
		return
	}
	var orphans []string
	for rows.Next() {
		var name, comment string
		if rows.Scan(&name, &comment) == nil && orphanedBy(comment) {
			orphans = append(orphans, name)
		}
	}
	rows.Close()
	for _, name := range orphans {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			logger.Warn("bench: could not drop an orphaned database", "database", name, "error", err)
		}
	}
}

// quote is a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
