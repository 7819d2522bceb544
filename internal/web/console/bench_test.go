package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/web/console"
	"github.com/onceledger/onceledger/protocol"
)

// BenchmarkListPages times the console's list pages, 50 rows each, over
// HTTP with a signed-in session, against a database holding a million
// commands of one company, each with its stored result and an event with
// a webhook delivery (one in a hundred failed, with an attempt), and a
// dead-letter stream of ten thousand; and a command's page by its key:
//
//	go test -run '^$' -bench BenchmarkListPages -benchtime 100x ./internal/web/console
//
// ONCELEDGER_BENCH_EVENTS and ONCELEDGER_BENCH_DEAD_LETTERS change the
// sizes. No worker runs: nothing else reads or writes meanwhile.
func BenchmarkListPages(b *testing.B) {
	events := benchSize(b, "ONCELEDGER_BENCH_EVENTS", 1_000_000)
	deadLetters := benchSize(b, "ONCELEDGER_BENCH_DEAD_LETTERS", 10_000)
	ctx := context.Background()
	dsn, natsURL := testenv.Migrated(b), testenv.NATS(b)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}

	// A company with an endpoint for every event, through the pipeline;
	// then the events in one statement, whose triggers write their
	// deliveries and queue them for the relay as a command's would.
	audittest.Process(b, pool, "acme", "company.create", "acme-setup", map[string]any{"name": "Acme UAB", "country": "LT", "currency": "EUR"})
	audittest.Process(b, pool, "acme", "webhook_endpoint.create", "hook-all", map[string]any{"url": "https://hooks.example.com/all"})
	start := time.Now()
	for _, q := range []string{
		// Time-ordered IDs, as the outbox's UUIDv7 are.
		`INSERT INTO outbox_events (id, company_id, sequence, type, body, created_at, idempotency_key)
		 SELECT (lpad(to_hex(1767225600000 + n), 12, '0') || '7000' || '8000' || lpad(to_hex(n), 12, '0'))::uuid,
		        'acme', 1000 + n, 'invoice.created', '{"id": "x"}', now() - make_interval(secs => $1 - n), 'key-' || n
		   FROM generate_series(1, $1::int) AS n`,
		// Each event's command, done.
		`INSERT INTO inbox (company_id, idempotency_key, command, fingerprint, status, result, stream_sequence, created_at)
		 SELECT 'acme', 'key-' || n, 'invoice.create', sha256(n::text::bytea), 'ok',
		        json_build_object('company', 'acme', 'idempotency_key', 'key-' || n, 'command', 'invoice.create', 'status', 'ok', 'result', json_build_object()),
		        n, now() - make_interval(secs => $1 - n)
		   FROM generate_series(1, $1::int) AS n`,
		`UPDATE webhook_deliveries SET status = 'failed', attempts = 1, last_status = 502
		  WHERE company_id = 'acme' AND event_id IN (SELECT id FROM outbox_events WHERE company_id = 'acme' AND sequence % 100 = 0)`,
		`INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_snippet)
		 SELECT id, now(), 502, 40, 'bad gateway' FROM webhook_deliveries WHERE status = 'failed'`,
		`ANALYZE`,
	} {
		args := []any{}
		if strings.Contains(q, "$1") {
			args = append(args, events)
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
	var deliveries int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries); err != nil || deliveries < int64(events) {
		b.Fatalf("%d deliveries for %d events (%v)", deliveries, events, err)
	}
	b.Logf("seeded %d events and %d deliveries in %s", events, deliveries, time.Since(start).Round(time.Second))

	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: consumer.DefaultDeadLetterStream, Subjects: []string{protocol.DeadLetterPrefix + ">"}}); err != nil {
		b.Fatal(err)
	}
	for i := range deadLetters {
		msg := nats.NewMsg(protocol.DeadLetterPrefix + "cmd.acme.invoice.create")
		msg.Data = []byte(`{"order_id": "o-` + strconv.Itoa(i) + `"}`)
		msg.Header.Set(protocol.HeaderIdempotencyKey, "dead-"+strconv.Itoa(i))
		msg.Header.Set(protocol.HeaderDeadLetterCode, "invalid_command")
		msg.Header.Set(protocol.HeaderOriginalSubject, protocol.CommandSubjectPrefix+"acme.invoice.create")
		if _, err := js.PublishMsgAsync(msg); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("the dead letters were not all stored within a minute")
	}

	c, err := console.New(console.Config{Pool: pool, JS: js})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	_, token, err := console.CreateToken(ctx, pool, "bench operator")
	if err != nil {
		b.Fatal(err)
	}
	e := &env{URL: srv.URL}
	client := browser(b)
	if resp := signIn(b, e, client, token); resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("sign-in: %s", resp.Status)
	}

	// The cursor of the page in the middle of the company's deliveries.
	var midEvent, midEndpoint string
	if err := pool.QueryRow(ctx, `SELECT event_id::text, endpoint_id::text FROM webhook_deliveries
		 WHERE company_id = 'acme' ORDER BY event_id DESC, endpoint_id DESC OFFSET $1 LIMIT 1`, events/2).Scan(&midEvent, &midEndpoint); err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct {
		name, path string
		// rows is how many rows the page must show: what counts one.
		rows int
		row  string
	}{
		{"deliveries/newest", "/console/webhooks?company=acme", 50, `name="delivery"`},
		{"deliveries/middle", "/console/webhooks?company=acme&after=" + midEvent + "." + midEndpoint, 50, `name="delivery"`},
		{"deliveries/failed", "/console/webhooks?company=acme&status=failed", 50, `name="delivery"`},
		{"dead-letters/oldest", "/console/dead-letters", 50, `<tr><td><a href="/console/dead-letters/`},
		{"dead-letters/middle", "/console/dead-letters?company=acme&after=" + strconv.Itoa(deadLetters/2), 50, `<tr><td><a href="/console/dead-letters/`},
		{"commands/key", "/console/commands?company=acme&key=key-" + strconv.Itoa(events/2), 1, `<td>invoice.created<br>`},
		{"commands/unknown-key", "/console/commands?company=acme&key=never-sent", 1, `id="messages-note"`},
	} {
		b.Run(p.name, func(b *testing.B) {
			check := func() {
				resp, page := get(b, client, srv.URL+p.path)
				if resp.StatusCode != http.StatusOK && !(p.name == "commands/unknown-key" && resp.StatusCode == http.StatusNotFound) {
					b.Fatalf("%s: %s\n%s", p.path, resp.Status, page)
				}
				if n := strings.Count(page, p.row); n != p.rows {
					b.Fatalf("%s: %d rows, want %d", p.path, n, p.rows)
				}
			}
			check()
			b.ResetTimer()
			for b.Loop() {
				check()
			}
		})
	}
}

func benchSize(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 {
		b.Fatalf("%s=%q: a number of at least 100", name, s)
	}
	return n
}
