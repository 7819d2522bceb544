package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/webhooks"
)

// commandStream is every message body in LEDGER_CMD, joined.
func (e *apiEnv) commandStream() []byte {
	e.t.Helper()
	ctx := context.Background()
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := js.Stream(ctx, "LEDGER_CMD")
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	var all []byte
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		all = append(append(all, m.Data...), '\n')
	}
	return all
}

// A generated signing secret is in the first answer only; a caller's own
// secret given over HTTP is sealed before it is published, so neither the
// command stream, the inbox nor any replay holds it readable.
func TestSigningSecretsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	e.setup(acme)

	body := []byte(`{"url":"https://hooks.example.com/acme"}`)
	first := e.post("/v1/webhook-endpoints/create", acme, "endpoint-1", body)
	var shown, replayed map[string]any
	if err := json.Unmarshal(first.body, &shown); err != nil || first.status != http.StatusCreated {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	secret, _ := shown["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the first answer shows no secret: %s", first.body)
	}
	again := e.post("/v1/webhook-endpoints/create", acme, "endpoint-1", body)
	json.Unmarshal(again.body, &replayed)
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" ||
		replayed["secret"] != nil || replayed["secret_note"] != webhooks.SecretNote || replayed["endpoint_id"] != shown["endpoint_id"] {
		t.Fatalf("replay: %d %v %s", again.status, again.header, again.body)
	}
	// Where the secret was, a replay says it is gone and when it was shown.
	if _, present := replayed["secret"]; !present || !shownRecently(replayed["secret_shown"]) {
		t.Fatalf("replay without \"secret\": null and \"secret_shown\": %s", again.body)
	}
	r := e.get("/v1/commands/endpoint-1", acme)
	var looked map[string]any
	json.Unmarshal(r.body, &looked)
	if _, present := looked["secret"]; r.status != http.StatusCreated || bytes.Contains(r.body, []byte(secret)) ||
		looked["secret_note"] != webhooks.SecretNote || !present || looked["secret"] != nil || looked["secret_shown"] != replayed["secret_shown"] {
		t.Fatalf("lookup: %d %s", r.status, r.body)
	}
	var inbox string
	e.pool.QueryRow(context.Background(), `SELECT result::text FROM inbox WHERE idempotency_key = 'endpoint-1'`).Scan(&inbox)
	if inbox == "" || strings.Contains(inbox, secret) {
		t.Fatalf("the inbox holds %q", inbox)
	}

	// The caller's own secret.
	mine := "whsec_" + strings.Repeat("c2VjcmV0", 4)
	own := []byte(`{"url":"https://hooks.example.com/own","secret":"` + mine + `"}`)
	r = e.post("/v1/webhook-endpoints/create", acme, "endpoint-2", own)
	if r.status != http.StatusCreated || bytes.Contains(r.body, []byte(mine)) {
		t.Fatalf("create with a secret: %d %s", r.status, r.body)
	}
	if r := e.post("/v1/webhook-endpoints/create", acme, "endpoint-2", own); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the same request again was not a replay: %d %s", r.status, r.body)
	}
	other := bytes.Replace(own, []byte("c2Vj"), []byte("b3Ro"), 1)
	if r := e.post("/v1/webhook-endpoints/create", acme, "endpoint-2", other); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("another secret under the same key: %d %s", r.status, r.body)
	}
	stream := e.commandStream()
	if !bytes.Contains(stream, []byte(`"sealed_secret":"sealed:v1:`)) || bytes.Contains(stream, []byte(mine)) || bytes.Contains(stream, []byte(`"secret"`)) {
		t.Fatalf("the command stream holds:\n%s", stream)
	}
	var ep struct {
		ID string `json:"endpoint_id"`
	}
	json.Unmarshal(r.body, &ep)
	var sealed string
	if err := e.pool.QueryRow(context.Background(), `SELECT secrets->0->>'sealed' FROM webhook_endpoints WHERE id = $1`, ep.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if got, err := testkeys.Keyring().Open("acme", sealed); err != nil || got != mine {
		t.Fatalf("the stored secret opens to %q (%v)", got, err)
	}

	// Refused before anything is published.
	for _, c := range []struct{ body, want string }{
		{`{"url":"https://x.example.com","secret":"` + mine + `","sealed_secret":"sealed:v1:00000000:AA"}`, "not both"},
		{`{"url":"https://x.example.com","secret":42}`, "must be a string"},
	} {
		r := e.post("/v1/webhook-endpoints/create", acme, "endpoint-bad", []byte(c.body))
		if p := r.problem(t); r.status != http.StatusBadRequest || p.Code != "invalid_command" || !strings.Contains(p.Detail, c.want) {
			t.Errorf("%s: %d %s", c.body, r.status, r.body)
		}
	}
}

// shownRecently reports whether v is an RFC 3339 time of the last minute.
func shownRecently(v any) bool {
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339, s)
	return err == nil && time.Since(at) < time.Minute && time.Until(at) < time.Minute
}
