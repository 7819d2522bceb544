package chaos

import (
	"bytes"
	"encoding/json"
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
	fa := schedule(42, 20, 2, time.Minute, true, nil)
	if !reflect.DeepEqual(fa, schedule(42, 20, 2, time.Minute, true, nil)) {
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
		if k != kindCompany && k != kindEndpoint && kinds[k] == 0 {
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
	for _, f := range schedule(1, 200, 2, time.Minute, false, nil) {
		if f.kind == faultPGCrash {
			t.Fatal("a Postgres crash was scheduled on a server the suite may not restart")
		}
	}
	for _, f := range schedule(1, 200, 2, time.Minute, true, []string{"nats-kill", "pause"}) {
		if f.kind != faultNATSKill && f.kind != faultPauseReceive {
			t.Fatalf("scheduled %s, want only nats-kill and pause", f.kind)
		}
	}
	// A plan as long as the kinds that may be drawn holds each of them.
	for _, pg := range []bool{false, true} {
		want := len(FaultKinds) - 1
		if pg {
			want++
		}
		for seed := range uint64(50) {
			seen := map[faultKind]bool{}
			for _, f := range schedule(seed, want, 2, 10*time.Second, pg, nil) {
				seen[f.kind] = true
			}
			if len(seen) != want {
				t.Fatalf("seed %d, Postgres restarts %v: %d faults hold %d kinds %v, want every one of %d", seed, pg, want, len(seen), seen, want)
			}
		}
	}
	if fs := schedule(1, 10, 2, time.Minute, false, []string{"pg-crash"}); len(fs) != 0 {
		t.Fatalf("scheduled %d faults of a kind that cannot be injected", len(fs))
	}
}
