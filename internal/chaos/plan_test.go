package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// The seed must fix everything that does not depend on the system's
// answers: a failed run is replayed from its seed.
func TestPlanIsDeterministic(t *testing.T) {
	companies := companyIDs(3)
	_, a := plan(42, companies, 500, "r")
	_, b := plan(42, companies, 500, "r")
	_, c := plan(43, companies, 500, "r")
	same := func(x, y []*op) bool {
		for i := range x {
			if x[i].key != y[i].key || x[i].kind != y[i].kind || x[i].mode != y[i].mode || x[i].company != y[i].company ||
				!bytes.Equal(x[i].body, y[i].body) || !bytes.Equal(x[i].changed, y[i].changed) || x[i].pick != y[i].pick {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Fatal("the same seed planned different operations")
	}
	if same(a, c) {
		t.Fatal("different seeds planned the same operations")
	}
	fa := schedule(42, 20, 2, 1, time.Minute, true, nil)
	if !reflect.DeepEqual(fa, schedule(42, 20, 2, 1, time.Minute, true, nil)) {
		t.Fatal("the same seed scheduled different faults")
	}
	for i := 1; i < len(fa); i++ {
		if fa[i].at < fa[i-1].at {
			t.Fatalf("faults out of order: %v", fa)
		}
	}
}

// Every planned body must be what its kind intends: valid commands decode,
// malformed ones never reach the inbox.
func TestPlannedBodies(t *testing.T) {
	_, load := plan(7, companyIDs(4), 2000, "r")
	kinds := map[opKind]int{}
	for _, o := range load {
		kinds[o.kind]++
		switch o.kind {
		case kindPayment, kindCreditNote:
			for _, known := range [][]knownInvoice{nil, {{id: "0190f2a4-7c1e-7000-8000-000000000001", customer: "cust-1", currency: "EUR"}}} {
				body, changed := runtimeBody(o, known)
				mustDecode(t, o.command, body)
				mustDecode(t, o.command, changed)
			}
		case kindMalformed:
			if o.marker == "" {
				t.Fatalf("malformed op %d has no marker", o.idx)
			}
			if o.variant == malBadJSON && json.Valid(o.body) {
				t.Fatalf("bad JSON op %d is valid JSON", o.idx)
			}
		default:
			mustDecode(t, o.command, o.body)
			mustDecode(t, o.command, o.changed)
			if bytes.Equal(o.body, o.changed) {
				t.Fatalf("op %d: the changed payload is the same", o.idx)
			}
		}
		if o.mode == modeChanged && o.marker == "" {
			t.Fatalf("changed-payload op %d has no marker", o.idx)
		}
	}
	for k := range kindNames {
		if k != kindCompany && k != kindEndpoint && k != kindOpening && kinds[k] == 0 {
			t.Errorf("no %s operation in 2000", kindNames[k])
		}
	}
}

func mustDecode(t *testing.T, command string, body []byte) {
	t.Helper()
	if _, err := ledger.Decode(command, body); err != nil {
		t.Fatalf("%s %s: %v", command, body, err)
	}
}

func TestDefinitive(t *testing.T) {
	cases := []struct {
		res  protocol.Result
		want bool
	}{
		{protocol.Result{Status: protocol.StatusOK, Command: "invoice.create"}, true},
		{protocol.ErrorResult("c", "k", "invoice.create", &ledger.Error{Code: ledger.CodeDuplicateDocument}), true},
		{protocol.ErrorResult("c", "k", "credit_note.create", &ledger.Error{Code: ledger.CodeNotFound}), true},
		{protocol.ErrorResult("c", "k", "", &ledger.Error{Code: ledger.CodeNotFound}), false},
		{protocol.ErrorResult("c", "k", "", &ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight}), false},
		{protocol.ErrorResult("c", "k", "invoice.create", &ledger.Error{Code: ledger.CodeInternal}), false},
	}
	for _, c := range cases {
		if got := definitive(c.res); got != c.want {
			t.Errorf("definitive(%+v) = %v, want %v", c.res.Error, got, c.want)
		}
	}
}

func TestNormalizeIgnoresOnlyReplayed(t *testing.T) {
	first := []byte(`{"company":"c","idempotency_key":"k","command":"invoice.create","status":"ok","result":{"sequence":1},"replayed":false}`)
	replay := []byte(`{"company":"c","idempotency_key":"k","command":"invoice.create","status":"ok","result":{"sequence":1},"replayed":true}`)
	other := []byte(`{"company":"c","idempotency_key":"k","command":"invoice.create","status":"ok","result":{"sequence":2},"replayed":true}`)
	a, _ := normalize(first)
	b, _ := normalize(replay)
	c, _ := normalize(other)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatalf("normalize: %s %s %s", a, b, c)
	}
}

func TestScheduleKinds(t *testing.T) {
	for _, f := range schedule(1, 200, 2, 1, time.Minute, false, nil) {
		if f.kind == faultPGCrash {
			t.Fatal("a Postgres crash was scheduled on a server the suite may not restart")
		}
		if f.kind.clusterOnly() {
			t.Fatalf("%s was scheduled on one NATS server", f.kind)
		}
	}
	for _, f := range schedule(1, 200, 2, 1, time.Minute, true, []string{"nats-kill", "pause"}) {
		if f.kind != faultNATSKill && f.kind != faultPauseReceive {
			t.Fatalf("scheduled %s, want only nats-kill and pause", f.kind)
		}
	}
	// A plan as long as the kinds that may be drawn holds each of them.
	for _, pg := range []bool{false, true} {
		want := len(FaultKinds) - 3 // no Postgres crash, no cluster kinds
		if pg {
			want++
		}
		for seed := range uint64(50) {
			seen := map[faultKind]bool{}
			for _, f := range schedule(seed, want, 2, 1, 10*time.Second, pg, nil) {
				seen[f.kind] = true
			}
			if len(seen) != want {
				t.Fatalf("seed %d, Postgres restarts %v: %d faults hold %d kinds %v, want every one of %d", seed, pg, want, len(seen), seen, want)
			}
		}
	}
	if fs := schedule(1, 10, 2, 1, time.Minute, false, []string{"pg-crash"}); len(fs) != 0 {
		t.Fatalf("scheduled %d faults of a kind that cannot be injected", len(fs))
	}
}

// On a cluster, a plan as long as the kinds that may be drawn (leader-kill
// counting twice) kills each stream's leader and stops a node.
func TestScheduleCluster(t *testing.T) {
	only := []string{"kill", "term", "pause", "leader-kill", "node-stop"}
	for seed := range uint64(50) {
		streams := map[string]int{}
		stops := 0
		fs := schedule(seed, 6, 2, 3, 12*time.Second, false, only)
		for _, f := range fs {
			switch f.kind {
			case faultLeaderKill:
				streams[f.stream]++
			case faultNodeStop:
				stops++
			}
			if f.node < 0 || f.node > 2 {
				t.Fatalf("seed %d: node %d of 3", seed, f.node)
			}
		}
		if len(fs) != 6 || streams[leaderStreams[0]] != 1 || streams[leaderStreams[1]] != 1 || stops != 1 {
			t.Fatalf("seed %d: %d faults, leader kills by stream %v, %d node stops; want 6, one of each stream, one stop", seed, len(fs), streams, stops)
		}
	}
	// One server's plan does not change with the cluster's kinds.
	if !reflect.DeepEqual(schedule(42, 20, 2, 1, time.Minute, true, nil), schedule(42, 20, 2, 1, time.Minute, true, []string{"kill", "term", "nats-term", "nats-kill", "pg-crash", "pause"})) {
		t.Fatal("the cluster's kinds changed one server's plan")
	}
}

func TestEventOrder(t *testing.T) {
	ev := func(company string, seq int) []byte {
		return []byte(fmt.Sprintf(`{"id":"x","type":"invoice.created","company":%q,"sequence":%d,"data":{}}`, company, seq))
	}
	cases := []struct {
		name   string
		bodies [][]byte
		want   []string // violations, in order
	}{
		{"in order, companies interleaved", [][]byte{ev("a", 1), ev("b", 1), ev("a", 2), ev("a", 5), ev("b", 2)}, nil},
		{"out of order", [][]byte{ev("a", 1), ev("a", 3), ev("b", 1), ev("a", 2)},
			[]string{"company a: sequence 2 (stream sequence 4) after sequence 3 (stream sequence 2)"}},
		{"twice", [][]byte{ev("a", 1), ev("a", 2), ev("a", 2)},
			[]string{"company a: sequence 2 twice, at stream sequences 2 and 3"}},
		{"not an event", [][]byte{ev("a", 1), []byte(`{"company":"a"}`)},
			[]string{`the message at stream sequence 2 is not an event with a company and a sequence: {"company":"a"}`}},
	}
	for _, c := range cases {
		o := newEventOrder()
		for i, b := range c.bodies {
			o.add(b, uint64(i+1))
		}
		var got []string
		for _, v := range o.check.listed {
			got = append(got, v.Detail)
		}
		if !reflect.DeepEqual(got, c.want) || o.check.res.Checked != int64(len(c.bodies)) {
			t.Errorf("%s: violations %q (examined %d), want %q", c.name, got, o.check.res.Checked, c.want)
		}
	}
}
