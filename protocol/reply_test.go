package protocol_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testworker"
	"github.com/onceledger/onceledger/protocol"
)

func TestReplySubjectAllowed(t *testing.T) {
	for subject, want := range map[string]bool{
		"_INBOX.abc.def":                  true,
		"_INBOX_acme.abc":                 true,
		"demo.results":                    true,
		"":                                false,
		"$JS.API.STREAM.PURGE.LEDGER_CMD": false,
		"$SYS.REQ.SERVER.PING":            false,
		"ledger.evt.beta.invoice.created": false,
		"ledger.cmd.beta.invoice.create":  false,
		"ledger.result.beta":              false,
	} {
		if got := protocol.ReplySubjectAllowed(subject); got != want {
			t.Errorf("ReplySubjectAllowed(%q) = %v, want %v", subject, got, want)
		}
	}
}

func TestReplyPolicy(t *testing.T) {
	def, err := protocol.ParseReplyPrefixes("")
	if err != nil {
		t.Fatal(err)
	}
	custom, err := protocol.ParseReplyPrefixes(" _INBOX_{company}. , app.{company}.replies. ")
	if err != nil {
		t.Fatal(err)
	}
	anySubject, err := protocol.ParseReplyPrefixes(">")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		subject             string
		def, custom, anySub bool
	}{
		{"_INBOX_acme.abc", true, true, true},
		{"_INBOX.abc.def", true, false, true},
		{"_INBOX_beta.stolen", false, false, true},
		{"_INBOX_acme_events.x", false, false, true},
		{"_INBOX_acmex.x", false, false, true},
		{"app.beta.orders", false, false, true},
		{"app.acme.replies.1", false, true, true},
		{"app.beta.replies.1", false, false, true},
		{"demo.results", false, false, true},
		{"$JS.API.STREAM.DELETE.LEDGER_CMD", false, false, false},
		{"ledger.evt.acme.invoice.created", false, false, false},
		{"_INBOX_acme.*", false, false, false},
		{"_INBOX_acme.>", false, false, false},
		{"_INBOX_acme..x", false, false, false},
		{"_INBOX_acme.a b", false, false, false},
		{"_INBOX_acme.", false, false, false},
	} {
		for _, p := range []struct {
			name   string
			policy protocol.ReplyPolicy
			want   bool
		}{{"default", def, c.def}, {"custom", custom, c.custom}, {">", anySubject, c.anySub}} {
			reason := p.policy.Refusal("acme", c.subject)
			if (reason == "") != p.want {
				t.Errorf("%s policy, acme answered on %q: refusal %q, want allowed %v", p.name, c.subject, reason, p.want)
			}
		}
	}
	if r := def.Refusal("acme", "_INBOX_beta.stolen"); !strings.Contains(r, "outside company acme's reply space") ||
		!strings.Contains(r, "_INBOX_acme.") || !strings.Contains(r, protocol.EnvReplyPrefixes) {
		t.Errorf("the reason does not say what is allowed: %q", r)
	}
	for _, bad := range []string{"_INBOX_{company}", "app.*.", "app.>.", "$JS.", "ledger.", "a..b.", "app.{tenant}.", "app.{company.", ","} {
		if _, err := protocol.ParseReplyPrefixes(bad); err == nil {
			t.Errorf("ParseReplyPrefixes(%q) accepted", bad)
		}
	}
}

// The company whose answer it is comes from the subject the message came
// on, a command's or a lookup's; the setting is read from the environment.
func TestReplyRefusal(t *testing.T) {
	for _, c := range []struct {
		subject, replyTo string
		allowed          bool
	}{
		{"ledger.cmd.acme.invoice.create", "_INBOX_acme.x", true},
		{"ledger.cmd.P.3.acme.invoice.create", "_INBOX_acme.x", true},
		{"ledger.cmd.acme.invoice.create", "_INBOX_beta.x", false},
		{"ledger.result.acme", "_INBOX_acme.x", true},
		{"ledger.result.acme", "_INBOX_beta.x", false},
		{"ledger.cmd.acme.invoice.create", "", true},
		{"elsewhere", "_INBOX_acme.x", false},
		{"ledger.cmd.", "_INBOX.x", false},
		// Malformed commands are answered with their refusal.
		{"ledger.cmd.acme", "_INBOX_acme.x", true},
		{"ledger.cmd.ACME.invoice.create", "_INBOX.x", true},
		{"ledger.cmd.ACME.invoice.create", "_INBOX_acme.x", false},
	} {
		if got := protocol.ReplyRefusal(c.subject, c.replyTo); (got == "") != c.allowed {
			t.Errorf("%s answered on %q: refusal %q", c.subject, c.replyTo, got)
		}
	}
	t.Setenv(protocol.EnvReplyPrefixes, "app.{company}.")
	if r := protocol.ReplyRefusal("ledger.cmd.acme.invoice.create", "_INBOX_acme.x"); r == "" {
		t.Error("the setting was not read")
	}
	if r := protocol.ReplyRefusal("ledger.cmd.acme.invoice.create", "app.acme.x"); r != "" {
		t.Error(r)
	}
	t.Setenv(protocol.EnvReplyPrefixes, "app.*.")
	if r := protocol.ReplyRefusal("ledger.cmd.acme.invoice.create", "app.acme.x"); !strings.Contains(r, protocol.EnvReplyPrefixes) {
		t.Errorf("an invalid setting: %q", r)
	}
}

// On the shipped NATS configuration, a producer of acme cannot make the
// worker answer into beta's reply space or onto any other subject it may
// not read; its command still runs and its result is there for the
// lookup. Its own client, with acme's inbox prefix, gets its answers.
// Not parallel: testenv.SecuredNATS sets the passwords in the environment.
func TestReplyToOutsideTheCompanysSpaceIsNotAnswered(t *testing.T) {
	t.Parallel()
	srv := testenv.SecuredNATS(t)
	dsn := testenv.Migrated(t)
	testworker.Start(t, dsn, srv.URL("worker"), nil)

	// Whoever else might read: the worker's user may subscribe anywhere.
	watcher, err := nats.Connect(srv.URL("worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	stolen := make(chan *nats.Msg, 16)
	for _, subject := range []string{"_INBOX_beta.>", "app.>"} {
		if _, err := watcher.ChanSubscribe(subject, stolen); err != nil {
			t.Fatal(err)
		}
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}

	acme, err := nats.Connect(srv.URL("acme"), nats.CustomInboxPrefix("_INBOX_acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer acme.Close()
	cl, err := client.NewWithConfig(acme, client.Config{AttemptTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func(name string) []byte {
		b, err := os.ReadFile("../examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if res, err := cl.Publish(ctx, "acme", "company.create", "setup", read("company.json")); err != nil || res.Status != protocol.StatusOK {
		t.Fatalf("company.create through acme's client: %+v %v", res, err)
	}

	invoice := read("invoice.json")
	for i, replyTo := range []string{"_INBOX_beta.stolen", "app.beta.orders"} {
		m := nats.NewMsg("ledger.cmd.acme.invoice.create")
		m.Data = []byte(strings.Replace(string(invoice), `"order_id": "`, `"order_id": "r`+string(rune('0'+i)), 1))
		key := "stolen-" + string(rune('0'+i))
		m.Header.Set(protocol.HeaderIdempotencyKey, key)
		m.Header.Set(protocol.HeaderReplyTo, replyTo)
		if err := acme.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		res, err := cl.Await(ctx, "acme", key)
		if err != nil || res.Status != protocol.StatusOK {
			t.Fatalf("the result of the command answered on %s: %+v %v", replyTo, res, err)
		}
	}
	// The answer is sent after the result is stored: give a stray one time
	// to arrive.
	select {
	case m := <-stolen:
		t.Fatalf("the worker answered acme's command on %s: %s", m.Subject, m.Data)
	case <-time.After(time.Second):
	}
}

func BenchmarkReplyRefusal(b *testing.B) {
	for range b.N {
		if r := protocol.ReplyRefusal("ledger.cmd.acme.invoice.create", "_INBOX_acme.abcdefghijklmnop.1"); r != "" {
			b.Fatal(r)
		}
	}
}
