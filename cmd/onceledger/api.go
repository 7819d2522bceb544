package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/internal/web/console"
	"github.com/onceledger/onceledger/internal/web/portal"
	"github.com/onceledger/onceledger/webhooks"
)

// apiSettings configure the HTTP command API served on the -http address.
type apiSettings struct {
	RequestTimeout time.Duration
	MaxBodyBytes   int
	ReadTimeout    time.Duration
	BodyTimeout    time.Duration
	MaxConns       int
	MaxConnsPerIP  int
}

func (a *apiSettings) register(fs *flag.FlagSet, s *settings) {
	fs.DurationVar(&a.RequestTimeout, "http-request-timeout", s.envDuration("ONCELEDGER_HTTP_REQUEST_TIMEOUT", 10*time.Second), "how long an HTTP command waits for its result before it is answered 202 with a Location to poll (env ONCELEDGER_HTTP_REQUEST_TIMEOUT)")
	fs.DurationVar(&a.ReadTimeout, "http-read-timeout", s.envDuration("ONCELEDGER_HTTP_READ_TIMEOUT", 30*time.Second), "how long a client may take to send a whole request, body included; slower ones are cut off (env ONCELEDGER_HTTP_READ_TIMEOUT)")
	fs.DurationVar(&a.BodyTimeout, "http-body-timeout", s.envDuration("ONCELEDGER_HTTP_BODY_TIMEOUT", 10*time.Second), "how long a client may take to send a request body, from the end of its headers; slower ones are answered 408 and cut off (env ONCELEDGER_HTTP_BODY_TIMEOUT)")
	fs.IntVar(&a.MaxConns, "http-max-conns", s.envInt("ONCELEDGER_HTTP_MAX_CONNS", 1024), "most HTTP connections open at once; more wait to be accepted (env ONCELEDGER_HTTP_MAX_CONNS)")
	fs.IntVar(&a.MaxConnsPerIP, "http-max-conns-per-ip", s.envInt("ONCELEDGER_HTTP_MAX_CONNS_PER_IP", 128), "most HTTP connections open at once from one client address; more are answered 503 and closed; behind a reverse proxy, set it to -http-max-conns (env ONCELEDGER_HTTP_MAX_CONNS_PER_IP)")
	fs.IntVar(&a.MaxBodyBytes, "http-max-body", s.envInt("ONCELEDGER_HTTP_MAX_BODY", 1<<20), "largest HTTP command body in bytes; larger ones are answered 413 (env ONCELEDGER_HTTP_MAX_BODY)")
}

func (a *apiSettings) validate() []error {
	var errs []error
	if a.RequestTimeout < 100*time.Millisecond || a.RequestTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("HTTP request timeout %s: use 100ms..5m", a.RequestTimeout))
	}
	if a.ReadTimeout < time.Second || a.ReadTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("HTTP read timeout %s: use 1s..10m", a.ReadTimeout))
	}
	// Above the read timeout, or above the max conns, the other bound
	// takes over (limitsFor): a setting made before this one existed
	// still starts.
	if a.BodyTimeout < 100*time.Millisecond || a.BodyTimeout > 10*time.Minute {
		errs = append(errs, fmt.Errorf("HTTP body timeout %s: use 100ms..10m", a.BodyTimeout))
	}
	if a.MaxConns < 1 || a.MaxConns > 1<<20 {
		errs = append(errs, fmt.Errorf("HTTP max conns %d: use 1..1048576", a.MaxConns))
	}
	if a.MaxConnsPerIP < 1 || a.MaxConnsPerIP > 1<<20 {
		errs = append(errs, fmt.Errorf("HTTP max conns per IP %d: use 1..1048576", a.MaxConnsPerIP))
	}
	if a.MaxBodyBytes < 1024 || a.MaxBodyBytes > 64<<20 {
		errs = append(errs, fmt.Errorf("HTTP max body %d: use 1024..67108864 bytes", a.MaxBodyBytes))
	}
	return errs
}

// mountAPI serves the HTTP command API under /v1/ on mux.
// cellOf is nil without cells.
func mountAPI(mux *http.ServeMux, pool *pgxpool.Pool, nc *nats.Conn, a apiSettings, keys *webhooks.Keyring, cellOf func(string) (string, bool), logger *slog.Logger) (*httpapi.Server, error) {
	api, err := httpapi.New(pool, nc, httpapi.Config{
		CellOf:         cellOf,
		Secrets:        keys,
		RequestTimeout: a.RequestTimeout,
		MaxBodyBytes:   int64(a.MaxBodyBytes),
		Logger:         logger.With("component", "httpapi"),
	})
	if err != nil {
		return nil, errors.Join(errors.New("HTTP API"), err)
	}
	mux.Handle("/v1/", api)
	return api, nil
}

// mountConsole serves the operator console under /console/ on mux.
func mountConsole(mux *http.ServeMux, pool *pgxpool.Pool, js jetstream.JetStream, streams consumer.StreamConfig, logger *slog.Logger) error {
	c, err := console.New(console.Config{
		Pool:             pool,
		JS:               js,
		CommandStream:    streams.Stream,
		Durable:          streams.Durable,
		DeadLetterStream: streams.DeadLetterStream,
		Logger:           logger.With("component", "console"),
	})
	if err != nil {
		return errors.Join(errors.New("operator console"), err)
	}
	mux.Handle("/console/", c)
	return nil
}

// mountPortal serves the company webhook portal under /portal/ on mux.
func mountPortal(mux *http.ServeMux, pool *pgxpool.Pool, nc *nats.Conn, logger *slog.Logger) error {
	cl, err := client.New(nc)
	if err != nil {
		return errors.Join(errors.New("webhook portal"), err)
	}
	p, err := portal.New(portal.Config{Pool: pool, Client: cl, Logger: logger.With("component", "portal")})
	if err != nil {
		return errors.Join(errors.New("webhook portal"), err)
	}
	mux.Handle("/portal/", p)
	return nil
}
