package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/pgcluster"
	"github.com/onceledger/onceledger/internal/throwaway"
)

const (
	setupTimeout   = 2 * time.Minute
	prepareTimeout = 5 * time.Minute
	// SQLSTATE 55006: the template is still in use by another session, e.g.
	// one a prepare function left open or a concurrent clone.
	objectInUse      = "55006"
	templateAttempts = 5
)

// pgServer is where test databases are created.
type pgServer struct {
	// adminDSN connects to a database that is never dropped, used to issue
	// CREATE/DROP DATABASE.
	adminDSN string
	// baseDSN is rewritten with a database name to address test databases.
	baseDSN string
	// admin holds the connections to adminDSN: a test binary creates and
	// drops hundreds of databases, and a connection of its own for each
	// would cost the server a backend's start every time.
	admin *pgxpool.Pool

	// drops are the test databases being dropped in the background: a
	// DROP DATABASE waits for a checkpoint, and a test that waited for its
	// own would hold up the next one; drops running side by side share
	// one checkpoint.
	drops    sync.WaitGroup
	dropSlot chan struct{}
	dropMu   sync.Mutex
	dropErrs []error
}

// concurrentDrops bounds the drops in flight, leaving one of the admin
// pool's connections to the next test's CREATE DATABASE.
const concurrentDrops = 3

// dropLater drops a test's database in the background; waitDrops waits
// for every drop and reports the failed ones.
func (s *pgServer) dropLater(name string) {
	s.drops.Add(1)
	go func() {
		defer s.drops.Done()
		s.dropSlot <- struct{}{}
		defer func() { <-s.dropSlot }()
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := dropDatabase(ctx, s, name); err != nil {
			s.dropMu.Lock()
			s.dropErrs = append(s.dropErrs, err)
			s.dropMu.Unlock()
		}
	}()
}

func (s *pgServer) waitDrops(context.Context) error {
	s.drops.Wait()
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	return errors.Join(s.dropErrs...)
}

func (s *pgServer) dsn(dbname string) string {
	return throwaway.WithDatabase(s.baseDSN, dbname)
}

// Process-wide state: one server, at most one template, per test binary.
var (
	pgOnce sync.Once
	pgSrv  *pgServer
	pgErr  error

	tplOnce sync.Once
	tplName string
	tplErr  error
	// tplMu serialises clones because PostgreSQL refuses to copy a template
	// that another session is using, and a clone in progress counts as one.
	tplMu sync.Mutex
)

// Postgres returns the URL of a new, empty database reserved for this test
// and dropped after it ends (in the background; the test binary waits for
// the drops before it exits).
func Postgres(t testing.TB) string {
	t.Helper()
	return PostgresWith(t, nil)
}

// PostgresWith is Postgres with a database already prepared by prepare
// (usually: run migrations). prepare runs once per test binary, on a
// template database that every test's database is then cloned from. The
// first non-nil prepare passed in a test binary is the one used; a binary
// must not mix different prepare functions.
func PostgresWith(t testing.TB, prepare func(ctx context.Context, dsn string) error) string {
	t.Helper()
	requireMain(t)
	srv := server(t)

	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()

	name := "onceledger_t_" + randomHex()
	if prepare == nil {
		if err := createDatabase(ctx, srv, name, ""); err != nil {
			t.Fatalf("testenv: %v", err)
		}
	} else {
		tpl := template(t, srv, prepare)
		if err := cloneTemplate(ctx, srv, name, tpl); err != nil {
			t.Fatalf("testenv: %v", err)
		}
	}
	t.Cleanup(func() { srv.dropLater(name) })
	return srv.dsn(name)
}

func server(t testing.TB) *pgServer {
	t.Helper()
	pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		pgSrv, pgErr = openServer(ctx)
	})
	if pgErr != nil {
		t.Fatalf("testenv: no PostgreSQL for tests: %v", pgErr)
	}
	return pgSrv
}

// clusterDirPrefix names the work directories of throwaway clusters, which
// the next test binary reaps if this one dies before Main's teardown.
const clusterDirPrefix = "onceledger-testenv-pg-"

func openServer(ctx context.Context) (*pgServer, error) {
	cfg := throwaway.Config{URL: os.Getenv("DATABASE_URL")}
	if cfg.URL == "" {
		throwaway.ReapDirs(ctx, clusterDirPrefix, slog.New(slog.NewTextHandler(os.Stderr, nil)).With("from", "testenv"))
		// Marked as this binary's before the cluster is started in it.
		dir, err := throwaway.MkdirOwned(clusterDirPrefix)
		if err != nil {
			return nil, fmt.Errorf("create dir for throwaway cluster: %w", err)
		}
		onTeardown(func(context.Context) error {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("remove %s: %w", dir, err)
			}
			return nil
		})
		cfg.Cluster = pgcluster.Config{Dir: filepath.Join(dir, "data"), Fast: true}
	}
	srv, err := throwaway.Postgres(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if srv.Cluster != nil {
		onTeardown(func(ctx context.Context) error {
			if err := srv.Stop(ctx); err != nil {
				return fmt.Errorf("stop throwaway cluster: %w", err)
			}
			return nil
		})
	}
	pcfg, err := pgxpool.ParseConfig(srv.AdminURL)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", throwaway.Redact(srv.AdminURL), err)
	}
	pcfg.MaxConns = concurrentDrops + 1
	admin, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", throwaway.Redact(srv.AdminURL), err)
	}
	// Registered after the cluster's stop, so it runs before it.
	onTeardown(func(context.Context) error { admin.Close(); return nil })
	s := &pgServer{adminDSN: srv.AdminURL, baseDSN: srv.AdminURL, admin: admin,
		dropSlot: make(chan struct{}, concurrentDrops)}
	// And the test databases' drops finish before the pool closes.
	onTeardown(s.waitDrops)
	return s, nil
}

func template(t testing.TB, srv *pgServer, prepare func(ctx context.Context, dsn string) error) string {
	t.Helper()
	tplOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
		defer cancel()
		tplName, tplErr = buildTemplate(ctx, srv, prepare)
	})
	if tplErr != nil {
		t.Fatalf("testenv: prepare template database: %v", tplErr)
	}
	return tplName
}

func buildTemplate(ctx context.Context, srv *pgServer, prepare func(ctx context.Context, dsn string) error) (string, error) {
	name := "onceledger_tpl_" + randomHex()
	if err := createDatabase(ctx, srv, name, ""); err != nil {
		return "", err
	}
	onTeardown(func(ctx context.Context) error { return dropDatabase(ctx, srv, name) })

	if err := prepare(ctx, srv.dsn(name)); err != nil {
		return "", fmt.Errorf("prepare %s: %w", name, err)
	}
	// Sessions the prepare step left open (pools, leaked conns) would make
	// every clone fail; end them and refuse new ones so the template stays
	// exactly as prepared.
	err := withAdmin(ctx, srv, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH ALLOW_CONNECTIONS false"); err != nil {
			return fmt.Errorf("lock template %s: %w", name, err)
		}
		if _, err := conn.Exec(ctx,
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
			return fmt.Errorf("end sessions on template %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return name, nil
}

func cloneTemplate(ctx context.Context, srv *pgServer, name, tpl string) error {
	tplMu.Lock()
	defer tplMu.Unlock()
	var err error
	for attempt := 1; attempt <= templateAttempts; attempt++ {
		err = createDatabase(ctx, srv, name, tpl)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != objectInUse {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (while waiting for template %s: %w)", err, tpl, ctx.Err())
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return err
}

func createDatabase(ctx context.Context, srv *pgServer, name, tpl string) error {
	return withAdmin(ctx, srv, func(conn *pgx.Conn) error {
		sql := "CREATE DATABASE " + ident(name)
		if tpl != "" {
			sql += " TEMPLATE " + ident(tpl)
		}
		// From PostgreSQL 15 a new database is written to the WAL block by
		// block (STRATEGY WAL_LOG, the default), where STRATEGY FILE_COPY
		// takes two immediate checkpoints per database: with hundreds of
		// databases per run and tests writing beside them, the checkpoints
		// cost the suite more than the log does (see docs/development.md).
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	})
}

func dropDatabase(ctx context.Context, srv *pgServer, name string) error {
	sql := "DROP DATABASE IF EXISTS " + ident(name) + " WITH (FORCE)"
	return withAdmin(ctx, srv, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	})
}

func withAdmin(ctx context.Context, srv *pgServer, fn func(*pgx.Conn) error) error {
	conn, err := srv.admin.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", throwaway.Redact(srv.adminDSN), err)
	}
	defer conn.Release()
	return fn(conn.Conn())
}

func ident(name string) string {
	return pgx.Identifier{name}.Sanitize()
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails; it aborts the program instead.
	return hex.EncodeToString(b)
}
