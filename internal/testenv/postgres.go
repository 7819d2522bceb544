package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/internal/pgcluster"
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
}

func (s *pgServer) dsn(dbname string) string {
	return withDatabase(s.baseDSN, dbname)
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
// and dropped when it ends.
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		if err := dropDatabase(ctx, srv, name); err != nil {
			t.Errorf("testenv: %v", err)
		}
	})
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

func openServer(ctx context.Context) (*pgServer, error) {
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		if err := ping(ctx, dsn); err != nil {
			return nil, fmt.Errorf("DATABASE_URL=%s is set but unusable: %w", redact(dsn), err)
		}
		return &pgServer{adminDSN: dsn, baseDSN: dsn}, nil
	}

	if _, err := pgcluster.Find(); err != nil {
		return nil, err
	}
	reapStale(ctx)
	dir, err := pgcluster.MkdirTemp(clusterDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create dir for throwaway cluster: %w", err)
	}
	onTeardown(func(context.Context) error {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
		return nil
	})
	// Recorded first, so a later binary can tell this cluster is orphaned if
	// this one dies before Main's teardown runs.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("record owner of throwaway cluster: %w", err)
	}
	cluster, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(dir, "data"), Fast: true})
	if err != nil {
		return nil, fmt.Errorf("start throwaway cluster: %w", err)
	}
	onTeardown(func(ctx context.Context) error {
		if err := cluster.Stop(ctx); err != nil {
			return fmt.Errorf("stop throwaway cluster: %w", err)
		}
		return nil
	})
	admin := cluster.URL("postgres")
	return &pgServer{adminDSN: admin, baseDSN: admin}, nil
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
	sql := "CREATE DATABASE " + ident(name)
	if tpl != "" {
		sql += " TEMPLATE " + ident(tpl)
	}
	return withAdmin(ctx, srv, func(conn *pgx.Conn) error {
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
	conn, err := pgx.Connect(ctx, srv.adminDSN)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(srv.adminDSN), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

func ping(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// withDatabase points dsn at dbname. URLs get their path replaced; for the
// keyword/value form, a trailing dbname wins over an earlier one.
func withDatabase(dsn, dbname string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path = "/" + dbname
			u.RawPath = ""
			return u.String()
		}
	}
	return strings.TrimSpace(dsn) + " dbname=" + dbname
}

// redact keeps passwords out of test output.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "(keyword/value DSN)"
}

func ident(name string) string {
	return pgx.Identifier{name}.Sanitize()
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails; it aborts the program instead.
	return hex.EncodeToString(b)
}
