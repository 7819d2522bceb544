package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/internal/worker"
	"github.com/onceledger/onceledger/migrations"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

func cmdRun(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	s.register(fs, true)
	fs.StringVar(&s.Cell, "cell", os.Getenv("ONCELEDGER_CELL"), "run as this cell of the placement stored in NATS (onceledger cells); empty runs the one cell of an installation without cells (env ONCELEDGER_CELL)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: onceledger run [flags]\n\nRuns the worker: consumes commands, relays events, answers result lookups.\n\nFlags (each also read from the environment variable named):\n")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if err := s.validate(true); err != nil {
		return err
	}
	return serve(ctx, &s, s.logger(os.Stderr), nil)
}

// serve runs the worker, the outbox relay and the health endpoints until ctx
// ends, then shuts them down in order. ready, if set, is called once
// everything is running.
func serve(ctx context.Context, s *settings, logger *slog.Logger, ready func()) error {
	tracerProvider, stopTracing, err := startTracing(ctx, logger)
	if err != nil {
		return err
	}
	// Deferred first so it runs last: the spans of the shutdown are flushed too.
	defer stopTracing()
	poolCfg, err := pgxpool.ParseConfig(s.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	// One connection per batch transaction, plus the relay and the webhook
	// dispatcher (claims, records, one LISTEN each), lookups and purges.
	if poolCfg.MaxConns < int32(s.BatchParallel+12) {
		poolCfg.MaxConns = int32(s.BatchParallel + 12)
	}
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	if err := requireCurrentSchema(ctx, pool); err != nil {
		return err
	}

	nc, err := s.NATS.connect("onceledger worker",
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			// Closing the connection at shutdown disconnects without an
			// error: that is the plan, not a warning.
			if err == nil {
				logger.Debug("NATS disconnected")
				return
			}
			logger.Warn("NATS disconnected", "error", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}

	ccfg := s.consumerConfig(logger)
	if s.Cell != "" && ccfg.Streams.Durable == "" {
		// Named here too, so that the metrics and the console read the
		// cell's consumer.
		ccfg.Streams.Durable = cells.Durable(s.Cell)
	}
	obs, err := newObservability(pool, js, ccfg.Streams.WithDefaults(ccfg.InboxRetention))
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	ccfg.Metrics = obs.consumer
	keys := s.keyring()
	if n, err := webhooks.SealStored(ctx, pool, keys); err != nil {
		return fmt.Errorf("webhook signing secrets: %w", err)
	} else if n > 0 {
		logger.Info("sealed webhook signing secrets with the first ONCELEDGER_SECRETS_KEY", "endpoints", n, "key_id", keys.KeyID())
	}
	policy := s.targets()
	k, err := s.kinds(keys)
	if err != nil {
		return err
	}
	wk, err := worker.New(ctx, worker.Config{
		Pool:     pool,
		NATS:     nc,
		Consumer: &ccfg,
		Kinds:    k,
		Cell:     s.Cell,
		Outbox:   &worker.Outbox{Stream: outbox.StreamConfig{Replicas: s.StreamReplicas}, Relay: outbox.RelayConfig{Gather: s.gather()}},
		Webhooks: &webhooks.DispatcherConfig{Workers: s.WebhookWorkers, PerEndpoint: s.WebhookPerEndpoint, Gather: s.gather(),
			RequestTimeout: s.WebhookTimeout, Lease: s.WebhookLease, BreakerCooldown: s.WebhookCooldown,
			DisableAfter: s.WebhookDisableAfter, Policy: policy, Secrets: keys, Metrics: obs.webhooks},
		Retention: &worker.Retention{Outbox: s.OutboxRetention, DeliveryLog: s.DeliveryLogRetention},
		Logger:    logger, TracerProvider: tracerProvider,
	})
	if err != nil {
		return err
	}

	// A shutdown drains first: /readyz fails, so that a load balancer
	// sends no more requests here, and the API publishes no new command.
	stopping := make(chan struct{})
	health := healthHandler(pool, nc, stopping, storeCheck(js, ccfg.Streams.WithDefaults(ccfg.InboxRetention).Stream))
	health.Handle("GET /metrics", promhttp.HandlerFor(obs.registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	var servers []*http.Server
	var api *httpapi.Server
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		for _, srv := range servers {
			_ = srv.Shutdown(sctx)
		}
	}()
	if s.HealthAddr != "" {
		ln, err := net.Listen("tcp", s.HealthAddr)
		if err != nil {
			return fmt.Errorf("listen on %s (ONCELEDGER_HEALTH_ADDR): %w", s.HealthAddr, err)
		}
		servers = append(servers, serveHTTP(ln, health, healthLimits, logger))
		logger.Info("health endpoints listening", "addr", ln.Addr().String())
	}
	if s.HTTPAddr != "" {
		ln, err := net.Listen("tcp", s.HTTPAddr)
		if err != nil {
			return fmt.Errorf("listen on %s (ONCELEDGER_HTTP_ADDR): %w", s.HTTPAddr, err)
		}
		mux := http.NewServeMux()
		// The health endpoints stay on the API's address too, for probes
		// configured before they had one of their own.
		mux.Handle("/", health)
		var cellOf func(string) (string, bool)
		if s.Cell != "" {
			// The placement the worker has just checked and started on,
			// kept current: this cell's partitions stay as they are
			// (the worker, and the API with it, stops when they change),
			// other cells' move.
			p, _, err := cells.Load(ctx, js)
			if err != nil {
				ln.Close()
				return err
			}
			live := cells.Follow(ctx, js, p, logger)
			cellOf = func(company string) (string, bool) {
				c, _ := live.Placement().CellOf(company)
				return c.Name, c.Name == s.Cell
			}
		}
		if api, err = mountAPI(mux, pool, nc, s.API, keys, cellOf, logger); err != nil {
			ln.Close()
			return err
		}
		if err := mountConsole(mux, pool, js, ccfg.Streams.WithDefaults(ccfg.InboxRetention), logger); err != nil {
			ln.Close()
			return err
		}
		if err := mountPortal(mux, pool, nc, logger); err != nil {
			ln.Close()
			return err
		}
		servers = append(servers, serveHTTP(ln, mux, limitsFor(s.API), logger))
		logger.Info("HTTP API listening", "addr", ln.Addr().String())
	}

	if ready != nil {
		ready()
	}
	go func() {
		<-ctx.Done()
		close(stopping)
		if api != nil {
			api.Drain()
		}
	}()
	err = wk.Run(ctx)
	if api != nil {
		// The worker finished what it had taken: a request still waiting
		// is for a command the next worker runs, and is told so.
		api.Stop()
	}
	return err
}

// healthHandler serves /healthz (the process is alive) and /readyz
// (Postgres and NATS are reachable and the schema is current). /healthz
// answers "ok" on its first line, as it did before it named the version on
// the next.
func healthHandler(pool *pgxpool.Pool, nc *nats.Conn, stopping <-chan struct{}, store func(context.Context) string) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "ok\nversion: %s\n", buildVersion())
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		checks := map[string]string{"postgres": "ok", "nats": "ok", "migrations": "ok"}
		ok := true
		select {
		case <-stopping:
			checks["shutdown"], ok = "shutting down: finishing the commands in flight", false
		default:
		}
		if err := pool.Ping(ctx); err != nil {
			checks["postgres"], ok = err.Error(), false
		}
		if !nc.IsConnected() {
			checks["nats"], ok = "not connected: "+nc.Status().String(), false
		} else if store != nil {
			if full := store(ctx); full != "" {
				checks["nats"], ok = full, false
			}
		}
		if pending, err := migrations.PendingOn(ctx, pool); err != nil {
			checks["migrations"], ok = err.Error(), false
		} else if pending {
			checks["migrations"], ok = "pending: run onceledger migrate", false
		}
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(checks)
	})
	return mux
}

// storeCheck says why the command stream refuses new commands, or ""
// (streams.StoreUse.Full). A stream it cannot read is not its failure:
// the NATS check reports the connection.
func storeCheck(js jetstream.JetStream, stream string) func(context.Context) string {
	return func(ctx context.Context) string {
		u, err := streams.ReadStoreUse(ctx, js, stream)
		if err != nil {
			return ""
		}
		return u.Full()
	}
}

// cmdHealthcheck says "ok" on success: silence left a person at a terminal
// guessing, and containers ignore stdout.
func cmdHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	health := fs.String("health", envOr("ONCELEDGER_HEALTH_ADDR", ":8081"), "the worker's health address, probed unless -http is given (env ONCELEDGER_HEALTH_ADDR)")
	httpAddr := fs.String("http", envOr("ONCELEDGER_HTTP_ADDR", ":8080"), "the worker's API address, probed when -http is given or the health address is empty (env ONCELEDGER_HTTP_ADDR)")
	path := fs.String("path", "/healthz", "endpoint to probe: /healthz or /readyz")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: onceledger healthcheck [flags]\n\nProbes a running worker's /healthz (or -path) and exits 0 when it answers 200, 1 otherwise: a container's HEALTHCHECK.\n\n")
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	addr := health
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "http" {
			addr = httpAddr
		}
	})
	if *addr == "" {
		addr = httpAddr
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return &usageError{fmt.Sprintf("address %q: %v", *addr, err)}
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+*path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s answered %s: %s", *path, resp.Status, body)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
