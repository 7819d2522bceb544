package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/internal/web/console"
	"github.com/onceledger/onceledger/protocol"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env is a running worker with the console served over HTTP on 127.0.0.1.
type env struct {
	URL   string // the server's root, without a trailing slash
	Token string // an operator token
	Pool  *pgxpool.Pool
	NC    *nats.Conn
	JS    jetstream.JetStream
}

func start(t *testing.T) *env {
	t.Helper()
	dsn, natsURL := testenv.Migrated(t), testenv.NATS(t)
	testworker.Start(t, dsn, natsURL, nil)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Config{Pool: pool, JS: js, Logger: testworker.Logger(), RefreshEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", c)
	srv := httptest.NewServer(mux) // binds 127.0.0.1
	t.Cleanup(srv.Close)
	_, token, err := console.CreateToken(context.Background(), pool, "test operator")
	if err != nil {
		t.Fatal(err)
	}
	return &env{URL: srv.URL, Token: token, Pool: pool, NC: nc, JS: js}
}

// createCompany runs company.create for acme under key.
func (e *env) createCompany(t *testing.T, key string) {
	t.Helper()
	e.command(t, "company.create", key, `{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"}`)
}

// command runs a command of acme under key and waits for its result,
// which must be a success.
func (e *env) command(t *testing.T, command, key, body string) {
	t.Helper()
	e.commandOf(t, "acme", command, key, body)
}

// commandOf is command for company.
func (e *env) commandOf(t *testing.T, company, command, key, body string) {
	t.Helper()
	cl, err := client.New(e.NC)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cl.Publish(ctx, company, command, key, []byte(body))
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	if res.Status != "ok" {
		t.Fatalf("%s: %+v", command, res)
	}
}

// deadLetter publishes a command nobody can answer (no Reply-To) and the
// worker refuses (an unknown command), which the worker dead-letters at
// once, and returns its dead-letter sequence once it is there.
func (e *env) deadLetter(t *testing.T, key string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := nats.NewMsg(protocol.CommandSubjectPrefix + "acme.nonsense.create")
	msg.Data = []byte(`{"what": "nothing", "secret": "s3cr3t-value"}`)
	msg.Header.Set(protocol.HeaderIdempotencyKey, key)
	msg.Header.Set("X-Api-Token", "h3ader-s3cr3t")
	if _, err := e.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	return e.waitDeadLetter(t, key, 0)
}

// waitDeadLetter returns the sequence of the dead letter with key other
// than not, once there is one.
func (e *env) waitDeadLetter(t *testing.T, key string, not uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dlq := ops.DeadLetters{JS: e.JS}
	for {
		page, err := dlq.Page(ctx, ops.DeadLetterQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Letters {
			if d.IdempotencyKey == key && d.Sequence != not {
				return d.Sequence
			}
		}
		// The worker dead-letters on its own schedule; the stream is
		// asked again until it has, or the context ends.
		select {
		case <-ctx.Done():
			t.Fatalf("no dead letter with key %s", key)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
