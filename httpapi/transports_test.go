package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// transports is one test's API with a worker behind it and a NATS client
// on the same queue, with company acme set up: every command can go over
// either transport, and a rule can be shown to answer alike on both.
type transports struct {
	*apiEnv
	token string
	nats  *client.Client
}

func newTransports(t *testing.T) *transports {
	t.Helper()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := client.NewWithConfig(nc, client.Config{AttemptTimeout: 2 * time.Second, MaxWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := &transports{apiEnv: e, token: e.token("acme"), nats: c}
	b.setup(b.token)
	return b
}

func (b *transports) path(command string) string {
	for _, rt := range commandRoutes {
		if rt.command == command {
			return rt.path
		}
	}
	b.t.Fatalf("no route for %s", command)
	return ""
}

// overNATS sends a command on the queue and returns its result.
func (b *transports) overNATS(command, key string, body any) protocol.Result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := b.nats.Publish(ctx, "acme", command, key, mustJSON(b.t, body))
	if err != nil {
		b.t.Fatalf("%s over NATS: %v", command, err)
	}
	return res
}

// overHTTP sends a command to its route and returns the answer.
func (b *transports) overHTTP(command, key string, body any) response {
	b.t.Helper()
	return b.post(b.path(command), b.token, key, mustJSON(b.t, body))
}

// ok sends a command over the transport named and decodes its result.
func ok[T any](b *transports, transport, command, key string, body any) T {
	b.t.Helper()
	var raw []byte
	switch transport {
	case "nats":
		res := b.overNATS(command, key, body)
		if res.Status != protocol.StatusOK {
			b.t.Fatalf("%s over NATS: %+v", command, res.Error)
		}
		raw = res.Result
	default:
		r := b.overHTTP(command, key, body)
		if r.status != http.StatusCreated {
			b.t.Fatalf("%s over HTTP: %d %s", command, r.status, r.body)
		}
		raw = r.body
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		b.t.Fatal(err)
	}
	return v
}

// refused sends the same refused command over both transports, with keys
// of their own, and checks both give code with the same message.
func (b *transports) refused(command, key string, body any, code ledger.Code, status int, fragment string) {
	b.t.Helper()
	res := b.overNATS(command, key+"-nats", body)
	if res.Status != protocol.StatusError || res.Error == nil || res.Error.Code != code || !strings.Contains(res.Error.Message, fragment) {
		b.t.Fatalf("%s over NATS: %+v %+v, want %s with %q", command, res.Status, res.Error, code, fragment)
	}
	r := b.overHTTP(command, key+"-http", body)
	p := r.problem(b.t)
	if r.status != status || p.Code != code || p.Detail != res.Error.Message {
		b.t.Fatalf("%s over HTTP: %d %s, want %d %s %q", command, r.status, r.body, status, code, res.Error.Message)
	}
}

// balance is debits less credits on an account, in EUR.
func (b *transports) balance(account string) string {
	b.t.Helper()
	var s string
	if err := b.pool.QueryRow(context.Background(), `
		SELECT coalesce(sum(debit - credit), 0)::numeric(28, 2)::text FROM journal_lines
		 WHERE company_id = 'acme' AND account_code = $1`, account).Scan(&s); err != nil {
		b.t.Fatal(err)
	}
	return s
}

// audited runs the audit and fails on any violation of the books checks.
func (b *transports) audited() {
	b.t.Helper()
	r, err := audit.Run(context.Background(), b.pool, audit.Options{Company: "acme"})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, v := range r.Violations {
		switch v.Check {
		case audit.CheckTrialBalance, audit.CheckJournalEntries, audit.CheckReceivables, audit.CheckCustomerCredits:
			b.t.Errorf("audit: %s %s %s: %s", v.Check, v.Company, v.Ref, v.Detail)
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
