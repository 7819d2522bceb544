package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// The seed must fix everything that does not depend on the system's
// answers: a failed run is replayed from its seed.
func TestPlanIsDeterministic(t *testing.T) {
	companies := companyIDs(3)
	sa, a := plan(42, companies, 500, "r")
	sb, b := plan(42, companies, 500, "r")
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
	if !same(a, b) || !same(sa, sb) {
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
		if !slices.Contains(setupKinds, k) && kinds[k] == 0 {
			t.Errorf("no %s operation in 2000", kindNames[k])
		}
	}
	if !slices.Equal(allKinds, slices.DeleteFunc(slices.Sorted(maps.Keys(kindNames)), func(k opKind) bool { return slices.Contains(setupKinds, k) })) {
		t.Errorf("the load's kinds %v and the setup's %v are not every kind once", allKinds, setupKinds)
	}
	// Revaluations and the supplier side are a small share each.
	for _, k := range []opKind{kindRevalue, kindSupplierPay, kindSupplierCredit} {
		if n := kinds[k]; n < 10 || n > 100 {
			t.Errorf("%d %s operations in 2000, want a small share", n, kindNames[k])
		}
	}
}

// The supplier side pays the opening's payable and uses the credit the
// payments leave: the opening carries openingPayable and stays balanced;
// each supplier payment has a reference of its key's own and a changed
// payload that changes only its amount, mostly an advance and sometimes
// paying less than its amount of openingPayable by its number; each
// application applies a little to openingPayable, its changed payload
// only another amount.
func TestPlannedSupplierSide(t *testing.T) {
	companies := companyIDs(2)
	setup, load := plan(7, companies, 2000, "r")
	eur, _ := ledger.LookupCurrency("EUR")
	for _, o := range setup {
		if o.kind != kindOpening {
			continue
		}
		cmd, err := ledger.Decode(o.command, o.body)
		if err != nil {
			t.Fatalf("%s %s: %v", o.command, o.body, err)
		}
		ob := cmd.(*ledger.RecordOpeningBalances)
		if len(ob.Payables) != 1 || ob.Payables[0].DocumentNumber != openingPayable || ob.Payables[0].SupplierID != openingSupplier ||
			ob.Payables[0].Currency != "EUR" || ob.Payables[0].Amount.StringFixed(2) != openingPayableAmount {
			t.Fatalf("%s: the opening's payables %+v, want %s of %s, %s EUR", o.company, ob.Payables, openingPayable, openingSupplier, openingPayableAmount)
		}
		_, entry, lerr := ledger.BookOpeningBalances(o.company, ob, eur, uuid.New(), uuid.New(), uuid.New)
		if lerr != nil {
			t.Fatalf("%s: booking the opening: %v", o.company, lerr)
		}
		if err := entry.Check(); err != nil {
			t.Fatalf("%s: the opening's entry: %v", o.company, err)
		}
	}
	refs := map[string]int{}
	allocated, advances, applications := 0, 0, 0
	for _, o := range load {
		switch o.kind {
		case kindSupplierPay:
			cmd, err := ledger.Decode(o.command, o.body)
			if err != nil {
				t.Fatalf("supplier payment op %d: %v", o.idx, err)
			}
			changed, err := ledger.Decode(o.command, o.changed)
			if err != nil {
				t.Fatalf("supplier payment op %d, changed: %v", o.idx, err)
			}
			c, d := cmd.(*ledger.RecordSupplierPayment), changed.(*ledger.RecordSupplierPayment)
			if prev, dup := refs[c.PaymentRef]; dup || !strings.Contains(c.PaymentRef, o.key) {
				t.Fatalf("supplier payment op %d: payment_ref %q is not its key's own (op %d has it too: %v)", o.idx, c.PaymentRef, prev, dup)
			}
			refs[c.PaymentRef] = o.idx
			if c.SupplierID != openingSupplier || c.Currency != "EUR" || strings.HasPrefix(o.company, "ghost-") {
				t.Fatalf("supplier payment op %d: %s %+v", o.idx, o.company, c)
			}
			if d.Amount.Equal(c.Amount.Decimal) {
				t.Fatalf("supplier payment op %d: the changed payload pays the same %s", o.idx, c.Amount)
			}
			d.Amount = c.Amount
			if !reflect.DeepEqual(c, d) {
				t.Fatalf("supplier payment op %d: the changed payload changes more than the amount: %+v, %+v", o.idx, c, d)
			}
			switch len(c.Allocations) {
			case 0:
				advances++
			case 1:
				a := c.Allocations[0]
				if a.DocumentNumber != openingPayable || a.PurchaseInvoiceID != "" || !a.Amount.LessThan(c.Amount.Decimal) {
					t.Fatalf("supplier payment op %d: allocation %+v of %s, want less than that of %s by its number", o.idx, a, c.Amount, openingPayable)
				}
				allocated++
			default:
				t.Fatalf("supplier payment op %d: %d allocations", o.idx, len(c.Allocations))
			}
		case kindSupplierCredit:
			cmd, err := ledger.Decode(o.command, o.body)
			if err != nil {
				t.Fatalf("supplier credit op %d: %v", o.idx, err)
			}
			changed, err := ledger.Decode(o.command, o.changed)
			if err != nil {
				t.Fatalf("supplier credit op %d, changed: %v", o.idx, err)
			}
			c, d := cmd.(*ledger.ApplySupplierCredit), changed.(*ledger.ApplySupplierCredit)
			if c.SupplierID != openingSupplier || c.DocumentNumber != openingPayable || c.PurchaseInvoiceID != "" || strings.HasPrefix(o.company, "ghost-") {
				t.Fatalf("supplier credit op %d: %s %+v", o.idx, o.company, c)
			}
			if d.Amount.Equal(c.Amount.Decimal) {
				t.Fatalf("supplier credit op %d: the changed payload applies the same %s", o.idx, c.Amount)
			}
			d.Amount = c.Amount
			if !reflect.DeepEqual(c, d) {
				t.Fatalf("supplier credit op %d: the changed payload changes more than the amount", o.idx)
			}
			applications++
		}
	}
	if advances == 0 || allocated == 0 || allocated > advances || applications == 0 {
		t.Fatalf("%d advances, %d supplier payments paying %s, %d applications: want mostly advances, some paying it, and applications",
			advances, allocated, openingPayable, applications)
	}
}

// The load's revaluations must be allowed once setup is done, and post
// something: the month has ended by the load's dates, the setup records
// its closing rate, and the opening leaves an item in another currency
// open in it at another rate.
func TestPlannedRevaluation(t *testing.T) {
	companies := companyIDs(2)
	setup, load := plan(7, companies, 2000, "r")
	if len(setup) != len(setupKinds)*len(companies) {
		t.Fatalf("%d setup operations for %d companies, want %d each", len(setup), len(companies), len(setupKinds))
	}
	month, err := ledger.ParsePeriod(revalueMonth)
	if err != nil {
		t.Fatal(err)
	}
	if month.Last().String() != revalueDay {
		t.Fatalf("the closing rate is dated %s, the last day of %s is %s", revalueDay, revalueMonth, month.Last())
	}
	// The load's earliest date: the month must have ended by then.
	loadDay := ledger.Date{Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	if err := (ledger.Books{Today: loadDay}).CheckRevaluation(month); err != nil {
		t.Fatalf("revaluing %s on %s: %v", revalueMonth, loadDay, err)
	}
	eur, _ := ledger.LookupCurrency("EUR")
	for i, c := range companies {
		var opening *ledger.RecordOpeningBalances
		var rate *ledger.RecordFXRate
		for j, k := range setupKinds {
			o := setup[i*len(setupKinds)+j]
			if o.kind != k || o.company != c {
				t.Fatalf("setup operation %d is %s for %s, want %s for %s", o.idx, kindNames[o.kind], o.company, kindNames[k], c)
			}
			if k == kindEndpoint {
				continue // its body is the receiver's URL, made at run time
			}
			cmd, err := ledger.Decode(o.command, o.body)
			if err != nil {
				t.Fatalf("%s %s: %v", o.command, o.body, err)
			}
			switch k {
			case kindOpening:
				opening = cmd.(*ledger.RecordOpeningBalances)
			case kindFXRate:
				rate = cmd.(*ledger.RecordFXRate)
			}
		}
		if opening.Date.After(month.First().Time) {
			t.Fatalf("the books begin on %s, after %s began", opening.Date, revalueMonth)
		}
		var items []ledger.OpenItem
		for _, r := range opening.Receivables {
			cur, _ := ledger.LookupCurrency(r.Currency)
			booked := r.Amount.Decimal
			if r.CompanyAmount != nil {
				booked = r.CompanyAmount.Decimal
			}
			items = append(items, ledger.OpenItem{Kind: ledger.OpenInvoice, Reference: r.InvoiceNumber, Currency: cur, Open: r.Amount.Decimal, Booked: booked})
		}
		usd, _ := ledger.LookupCurrency(rate.Currency)
		rates := map[string]*ledger.FXRate{rate.Currency: {Currency: usd, Date: rate.Date, Rate: rate.Rate.Decimal, Source: rate.Source}}
		id := uuid.New()
		r, entry, reversal, lerr := ledger.BookFXRevaluation(c, &ledger.RevalueFX{Month: revalueMonth}, eur, items, rates, id, uuid.New(), uuid.New())
		if lerr != nil {
			t.Fatalf("%s: revaluing the opening's items: %v", c, lerr)
		}
		if entry == nil || reversal == nil || r.Gain.Add(r.Loss).IsZero() {
			t.Fatalf("%s: the revaluation of %s posts nothing: %+v", c, revalueMonth, r.View())
		}
	}
	n := 0
	for _, o := range load {
		if o.kind != kindRevalue {
			continue
		}
		n++
		if o.command != new(ledger.RevalueFX).CommandName() || o.company == "" || strings.HasPrefix(o.company, "ghost-") {
			t.Fatalf("revaluation op %d: command %s for company %q", o.idx, o.command, o.company)
		}
		cmd, err := ledger.Decode(o.command, o.body)
		if err != nil || cmd.(*ledger.RevalueFX).Month != revalueMonth {
			t.Fatalf("revaluation op %d: body %s (%v), want month %s", o.idx, o.body, err, revalueMonth)
		}
	}
	if n == 0 {
		t.Fatal("no revaluation in the load")
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
