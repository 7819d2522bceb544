package throwaway

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/pgcluster"
)

// Config says where the server comes from.
type Config struct {
	// URL, when set, is the server to use (DATABASE_URL); it must answer.
	URL string
	// Cluster is started when URL is empty; its Dir is required then.
	Cluster pgcluster.Config
}

// Server is a PostgreSQL server to create databases on.
type Server struct {
	// AdminURL addresses a database that is never dropped, to create and
	// drop the others from.
	AdminURL string
	// Cluster is the cluster Postgres started; nil when it was given a URL.
	Cluster *pgcluster.Cluster
}

// Postgres returns the server cfg.URL names, after checking it answers,
// or else starts a local cluster. Stop stops what it started.
func Postgres(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.URL != "" {
		conn, err := pgx.Connect(ctx, cfg.URL)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(context.WithoutCancel(ctx))
		}
		if err != nil {
			return nil, fmt.Errorf("DATABASE_URL=%s is set but unusable: %w", Redact(cfg.URL), err)
		}
		return &Server{AdminURL: cfg.URL}, nil
	}
	if _, err := pgcluster.Find(); err != nil {
		return nil, fmt.Errorf("no DATABASE_URL, and no PostgreSQL server binaries for a throwaway cluster: %w", err)
	}
	c, err := pgcluster.Start(ctx, cfg.Cluster)
	if err != nil {
		return nil, fmt.Errorf("no DATABASE_URL, and a local PostgreSQL could not be started: %w", err)
	}
	return &Server{AdminURL: c.URL("postgres"), Cluster: c}, nil
}

// URL addresses database dbname on the server.
func (s *Server) URL(dbname string) string { return WithDatabase(s.AdminURL, dbname) }

// Stop stops the cluster Postgres started, if it started one.
func (s *Server) Stop(ctx context.Context) error {
	if s.Cluster == nil {
		return nil
	}
	return s.Cluster.Stop(ctx)
}

// Admin runs fn on a connection to the admin database.
func (s *Server) Admin(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, s.AdminURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", Redact(s.AdminURL), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

// CreateDatabase creates database name, marked with comment when it is
// not empty (see OwnerMark).
func (s *Server) CreateDatabase(ctx context.Context, name, comment string) error {
	return s.Admin(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
		if comment == "" {
			return nil
		}
		if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+pgx.Identifier{name}.Sanitize()+" IS "+quote(comment)); err != nil {
			return fmt.Errorf("mark database %s: %w", name, err)
		}
		return nil
	})
}

// DropDatabase drops database name if it exists, ending its sessions.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	return s.Admin(ctx, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	})
}

// WithDatabase points a URL or keyword/value DSN at dbname. URLs get their
// path replaced; keyword/value DSNs get a dbname appended, the last of two
// settings being the one that counts.
func WithDatabase(dsn, dbname string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path, u.RawPath = "/"+dbname, ""
		return u.String()
	}
	return strings.TrimSpace(dsn) + " dbname=" + dbname
}

// Redact is dsn fit for a message: a URL without its password and query,
// of a keyword/value DSN nothing.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		u.RawQuery = ""
		return u.Redacted()
	}
	return "(keyword/value DSN)"
}

// quote is a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
