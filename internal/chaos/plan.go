package chaos

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/protocol"
)

// opKind is what a logical operation does.
type opKind int

const (
	kindCompany        opKind = iota // company.create (setup)
	kindEndpoint                     // webhook_endpoint.create (setup)
	kindInvoice                      // invoice.create for a new order
	kindDupInvoice                   // invoice.create for an order another key already used
	kindPayment                      // payment.record, allocated to an invoice when one is known
	kindCreditNote                   // credit_note.create of one unit of an invoice's first line
	kindJournal                      // journal_entry.record: a bank fee, its own reference
	kindUnknownCompany               // invoice.create for a company that does not exist
	kindMalformed                    // never valid: answered with its refusal, never dead-lettered
	kindOpening                      // opening_balances.record (setup): the books begin on 2026-11-01
	kindFXRate                       // fx_rate.record (setup): the closing rate of revalueMonth
	kindRevalue                      // fx.revalue of revalueMonth: the first key revalues it, the others are duplicates
	kindSupplierPay                  // supplier_payment.record to openingSupplier: an advance, sometimes paying part of openingPayable
	kindSupplierCredit               // supplier_credit.apply: a little of the credit with openingSupplier to openingPayable
)

// revalueMonth is the month the load revalues: the month the books begin
// in, before the load's documents, which are dated in December. A month is
// revalued once its last day has come by the workers' clock, and the load
// never closes it. Its open item in another currency is the opening's
// receivable in revalueCurrency, booked at one rate and revalued at
// fxClosingRate, the rate of the month's last day recorded in setup, so
// every revaluation posts an entry and its reversal.
const (
	revalueMonth    = "2026-11"
	revalueCurrency = "USD"
	revalueDay      = "2026-11-30"
	fxClosingRate   = "1.0800"
)

// openingPayable is the supplier's invoice each company's opening leaves
// open, in EUR, for the load's supplier payments and credit applications
// to pay by its number. Supplier payments that pay less than their amount
// leave the rest as the company's credit with openingSupplier, which
// supplier_credit.apply uses.
const (
	openingPayable       = "OB-P1"
	openingSupplier      = "sup-1"
	openingPayableAmount = "200.00"
)

var kindNames = map[opKind]string{
	kindCompany: new(ledger.CreateCompany).CommandName(), kindEndpoint: new(ledger.CreateWebhookEndpoint).CommandName(), kindInvoice: "invoice",
	kindDupInvoice: "invoice, business duplicate", kindPayment: "payment", kindCreditNote: "credit note", kindJournal: "manual journal entry",
	kindUnknownCompany: "unknown company", kindMalformed: "malformed", kindOpening: new(ledger.RecordOpeningBalances).CommandName(),
	kindFXRate: new(ledger.RecordFXRate).CommandName(), kindRevalue: "fx revaluation",
	kindSupplierPay: "supplier payment", kindSupplierCredit: "supplier credit application",
}

// allKinds are the kinds of the load, in the order of their weights in
// planner.next and of the report.
var allKinds = []opKind{kindInvoice, kindDupInvoice, kindPayment, kindCreditNote, kindJournal, kindUnknownCompany, kindMalformed, kindRevalue,
	kindSupplierPay, kindSupplierCredit}

// setupKinds are the setup operations of each company, in order.
var setupKinds = []opKind{kindCompany, kindEndpoint, kindOpening, kindFXRate}

// mode is how the producer of an operation behaves.
type mode int

const (
	modeOnce       mode = iota // publish once, wait for the reply, else ask the lookup
	modeRetry                  // republish the same key and payload after a short wait, whatever came back
	modeConcurrent             // publish several copies at once
	modeChanged                // after the result, publish the same key with another payload
)

var modeNames = map[mode]string{modeOnce: "once", modeRetry: "retried", modeConcurrent: "concurrent copies", modeChanged: "changed payload"}

// Malformed variants.
const (
	malNoKey          = "no Idempotency-Key"
	malBadJSON        = "bad JSON"
	malUnknownCommand = "unknown command"
	malLongKey        = "key too long"
)

// op is one logical operation: one idempotency key (or, for malformed
// messages, one message) and everything the suite saw happen to it.
type op struct {
	idx     int
	kind    opKind
	mode    mode
	company string
	command string
	key     string
	orderID string
	pick    uint64 // seeded choice made at run time (which known invoice)
	copies  int    // retries or concurrent copies
	body    []byte // the first payload; payments and credit notes get it at run time
	changed []byte // the other payload of modeChanged
	variant string // malformed variant
	marker  string // Chaos-Marker header of malformed and changed messages

	mu              sync.Mutex
	started         bool
	accepted        bool // a message with the first payload is in the stream
	changedAccepted bool
	changedSkipped  bool
	answers         []answer // to the first payload: replies and lookups, in arrival order
	changedAnswers  []answer
	notify          chan struct{}
}

// answer is one result the producer received.
type answer struct {
	raw    []byte
	res    protocol.Result
	lookup bool
}

// definitive reports whether a result is the key's outcome rather than a
// "try again": in flight, a transient failure, or the lookup's "nothing
// stored yet" (not_found without a command; a command's own not_found, such
// as a credit note for a missing invoice, is an outcome).
func definitive(r protocol.Result) bool {
	if r.Error == nil {
		return r.Status == protocol.StatusOK
	}
	switch r.Error.Code {
	case ledger.CodeIdempotencyKeyInFlight, ledger.CodeInternal:
		return false
	case ledger.CodeNotFound:
		return r.Command != ""
	}
	return true
}

func (o *op) firstDefinitive() (answer, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range o.answers {
		if definitive(a.res) {
			return a, true
		}
	}
	return answer{}, false
}

func (o *op) record(changed bool, a answer) {
	o.mu.Lock()
	if changed {
		o.changedAnswers = append(o.changedAnswers, a)
	} else {
		o.answers = append(o.answers, a)
	}
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// planner draws the operations from the seed. Everything about an
// operation that does not depend on what the system answered is fixed here.
type planner struct {
	rng       *rand.Rand
	companies []string
	invoices  map[string][]int // company → indexes of invoice operations
	bodies    map[int][2][]byte
}

func companyIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("co-%d", i+1)
	}
	return out
}

// plan returns the setup operations (company, endpoint, opening and the
// closing rate of revalueMonth per company, as setupKinds) and the n
// operations of the load phase.
func plan(seed uint64, companies []string, n int, runID string) (setup, load []*op) {
	p := &planner{rng: rand.New(rand.NewPCG(seed, 0x706c616e)), companies: companies, invoices: map[string][]int{}, bodies: map[int][2][]byte{}}
	for _, c := range companies {
		body, _ := json.Marshal(map[string]string{"name": "Chaos " + c + " UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010"})
		setup = append(setup, &op{kind: kindCompany, company: c, command: new(ledger.CreateCompany).CommandName(), key: "setup-company", body: body})
		setup = append(setup, &op{kind: kindEndpoint, company: c, command: new(ledger.CreateWebhookEndpoint).CommandName(), key: "setup-endpoint"})
		// After the endpoint, so that its event is delivered too. OB-2 is
		// in revalueCurrency, carried at 100.00 EUR (1.05 USD per EUR);
		// the equity is what balances the bank and the receivables
		// (1221.00) less the payable (200.00).
		opening, _ := json.Marshal(map[string]any{
			"date":  "2026-11-01",
			"lines": []map[string]string{{"account": ledger.AccountBank, "debit": "1000.00"}, {"account": ledger.AccountEquity, "credit": "1021.00"}},
			"receivables": []map[string]string{
				{"invoice_number": "OB-1", "customer_id": "cust-1", "issue_date": "2026-10-15", "currency": "EUR", "amount": "121.00"},
				{"invoice_number": "OB-2", "customer_id": "cust-2", "issue_date": "2026-10-20", "currency": revalueCurrency, "amount": "105.00", "company_amount": "100.00"},
			},
			"payables": []map[string]string{
				{"document_number": openingPayable, "supplier_id": openingSupplier, "issue_date": "2026-10-25", "currency": "EUR", "amount": openingPayableAmount},
			},
		})
		setup = append(setup, &op{kind: kindOpening, company: c, command: new(ledger.RecordOpeningBalances).CommandName(), key: "setup-opening", body: opening})
		rate, _ := json.Marshal(map[string]string{"currency": revalueCurrency, "date": revalueDay, "rate": fxClosingRate, "source": "ECB"})
		setup = append(setup, &op{kind: kindFXRate, company: c, command: new(ledger.RecordFXRate).CommandName(), key: "setup-fx-rate", body: rate})
	}
	for i := range n {
		load = append(load, p.next(i, runID))
	}
	for i, o := range append(setup, load...) {
		o.idx = i
		o.notify = make(chan struct{}, 1)
	}
	return setup, load
}

func (p *planner) weighted(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := p.rng.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

func (p *planner) next(i int, runID string) *op {
	o := &op{company: p.companies[p.rng.IntN(len(p.companies))], pick: p.rng.Uint64()}
	o.key = fmt.Sprintf("k%06d-%08x", i, p.rng.Uint32())
	o.kind = allKinds[p.weighted(52, 5, 14, 14, 4, 2, 5, 2, 2, 2)]
	if o.kind == kindDupInvoice && len(p.invoices[o.company]) == 0 {
		o.kind = kindInvoice
	}
	o.mode = []mode{modeOnce, modeRetry, modeConcurrent, modeChanged}[p.weighted(40, 30, 15, 15)]
	o.copies = 1 + p.rng.IntN(3)
	switch o.kind {
	case kindInvoice, kindUnknownCompany:
		o.command = new(ledger.CreateInvoice).CommandName()
		o.orderID = fmt.Sprintf("order-%06d", i)
		o.body, o.changed = p.invoice(o.orderID)
		if o.kind == kindUnknownCompany {
			o.company = fmt.Sprintf("ghost-%d", p.rng.IntN(3))
		} else {
			p.invoices[o.company] = append(p.invoices[o.company], i)
			p.bodies[i] = [2][]byte{o.body, o.changed}
		}
	case kindDupInvoice:
		// Same order and body as an earlier invoice, fresh key: the mistake
		// of a producer that makes a new key per attempt.
		o.command = new(ledger.CreateInvoice).CommandName()
		list := p.invoices[o.company]
		orig := list[p.rng.IntN(len(list))]
		o.orderID = fmt.Sprintf("order-%06d", orig)
		o.body, o.changed = p.bodies[orig][0], p.bodies[orig][1]
	case kindPayment:
		o.command = new(ledger.RecordPayment).CommandName()
	case kindCreditNote:
		o.command = new(ledger.CreateCreditNote).CommandName()
	case kindJournal:
		o.command = new(ledger.RecordJournalEntry).CommandName()
		je := map[string]any{
			"entry_ref": fmt.Sprintf("je-%06d", i), "date": "2026-12-04", "reason": "Bank fee", "currency": "EUR",
			"lines": []map[string]string{
				{"account": ledger.AccountProviderFees, "debit": fmt.Sprintf("%d.%02d", 1+p.rng.IntN(9), p.rng.IntN(100))},
				{"account": ledger.AccountBank},
			},
		}
		lines := je["lines"].([]map[string]string)
		lines[1]["credit"] = lines[0]["debit"]
		o.body, _ = json.Marshal(je)
		je["reason"] = "Bank fee, corrected"
		o.changed, _ = json.Marshal(je)
	case kindRevalue:
		// Every key of a company asks for the same month: one revalues it,
		// the others are refused as duplicates naming the first's
		// revaluation. The changed payload names another month; it is
		// refused as a reused key, never executed.
		o.command = new(ledger.RevalueFX).CommandName()
		o.body, _ = json.Marshal(map[string]string{"month": revalueMonth})
		o.changed, _ = json.Marshal(map[string]string{"month": "2026-10"})
	case kindSupplierPay:
		// Its payment_ref is its key's: every copy and replay of the key is
		// one payment, and no other key records it. Mostly an advance,
		// left as the company's credit with the supplier; one in four
		// also pays a little of openingPayable by its number, which is
		// refused as a conflict once less is open. The changed payload
		// pays one euro more; it is refused as a reused key.
		o.command = new(ledger.RecordSupplierPayment).CommandName()
		cents := 500 + p.rng.IntN(4500)
		pay := map[string]any{
			"payment_ref": "spay-" + o.key, "supplier_id": openingSupplier, "paid_on": "2026-12-03",
			"currency": "EUR", "amount": money(cents),
		}
		if p.rng.IntN(4) == 0 {
			pay["allocations"] = []map[string]string{{"document_number": openingPayable, "amount": money(100 + p.rng.IntN(300))}}
		}
		o.body, _ = json.Marshal(pay)
		pay["amount"] = money(cents + 100)
		o.changed, _ = json.Marshal(pay)
	case kindSupplierCredit:
		// A little of the company's credit with the supplier applied to
		// openingPayable: refused as a conflict while the credit (what
		// supplier payments left unapplied so far) or what is open on the
		// payable is short. The changed payload applies one cent more.
		o.command = new(ledger.ApplySupplierCredit).CommandName()
		cents := 50 + p.rng.IntN(200)
		app := map[string]string{"supplier_id": openingSupplier, "document_number": openingPayable, "amount": money(cents), "applied_on": "2026-12-04"}
		o.body, _ = json.Marshal(app)
		app["amount"] = money(cents + 1)
		o.changed, _ = json.Marshal(app)
	case kindMalformed:
		o.mode = modeOnce
		o.command = new(ledger.CreateInvoice).CommandName()
		o.variant = []string{malNoKey, malBadJSON, malUnknownCommand, malLongKey}[p.rng.IntN(4)]
		o.body, _ = p.invoice(fmt.Sprintf("order-%06d", i))
		switch o.variant {
		case malNoKey:
			o.key = ""
		case malBadJSON:
			o.body = o.body[:len(o.body)/2]
		case malUnknownCommand:
			o.command = "invoice.frobnicate"
		case malLongKey:
			o.key = strings.Repeat("x", protocol.MaxKeyLength+1+p.rng.IntN(50))
		}
	}
	if o.kind == kindMalformed || o.mode == modeChanged {
		o.marker = fmt.Sprintf("%s-%d", runID, i)
	}
	return o
}

// money renders an amount of cents as the commands spell money.
func money(cents int) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }

// invoice returns an invoice body for order and, for modeChanged, the same
// invoice with one quantity changed.
func (p *planner) invoice(order string) (body, changed []byte) {
	currency := "EUR"
	if p.rng.IntN(100) < 15 {
		currency = "USD"
	}
	lines := []map[string]string{{
		"description": "Consulting", "quantity": "10",
		"unit_price": fmt.Sprintf("%d.%02d", 10+p.rng.IntN(90), p.rng.IntN(100)), "vat_rate": "21",
	}}
	if p.rng.IntN(2) == 0 {
		lines = append(lines, map[string]string{"description": "Accommodation", "quantity": fmt.Sprint(1 + p.rng.IntN(5)),
			"unit_price": fmt.Sprintf("%d.50", 1+p.rng.IntN(20)), "vat_rate": "12"})
	}
	if p.rng.IntN(3) == 0 {
		lines = append(lines, map[string]string{"description": "Export freight", "quantity": "1",
			"unit_price": fmt.Sprintf("%d.00", 5+p.rng.IntN(50)), "vat_rate": "0", "vat_treatment": "other_zero"})
	}
	inv := map[string]any{
		"order_id": order, "series": "INV", "currency": currency,
		"customer":   map[string]string{"id": fmt.Sprintf("cust-%d", p.rng.IntN(10)), "name": "Pirkėjas UAB", "country": "LT"},
		"issue_date": "2026-12-01", "due_date": "2027-01-15",
		"lines": lines,
	}
	if currency != "EUR" {
		// Declared in the company's EUR at the invoice's own rate.
		inv["exchange_rate"] = "1.0500"
	}
	body, _ = json.Marshal(inv)
	lines[0]["quantity"] = "11"
	changed, _ = json.Marshal(inv)
	return body, changed
}

// knownInvoice is an invoice a producer saw succeed: what payments and
// credit notes refer to.
type knownInvoice struct {
	id, customer, currency string
}

// runtimeBody builds the body of a payment or credit note against one of
// the invoices known so far (by the op's seeded pick), or against none.
func runtimeBody(o *op, known []knownInvoice) (body, changed []byte) {
	var inv *knownInvoice
	if len(known) > 0 {
		inv = &known[o.pick%uint64(len(known))]
	}
	switch o.kind {
	case kindPayment:
		pay := map[string]any{
			"payment_ref": "pay-" + o.key, "customer_id": "cust-walk-in", "received_on": "2026-12-03",
			"method": "bank", "currency": "EUR", "amount": "1.00",
		}
		if inv != nil {
			pay["customer_id"], pay["currency"] = inv.customer, inv.currency
			pay["allocations"] = []map[string]string{{"invoice_id": inv.id, "amount": "1.00"}}
			if inv.currency != "EUR" {
				// At another rate than the invoice's: an exchange difference.
				pay["exchange_rate"] = "1.0600"
			}
		}
		body, _ = json.Marshal(pay)
		pay["amount"] = "2.00"
		changed, _ = json.Marshal(pay)
	case kindCreditNote:
		id := "00000000-0000-7000-8000-000000000000" // no invoice known yet: a not_found business error
		if inv != nil {
			id = inv.id
		}
		cn := map[string]any{
			"invoice_id": id, "series": "CN", "issue_date": "2026-12-02", "reason": "Returned one unit",
			"lines": []map[string]any{{"line": 1, "quantity": "1"}},
		}
		body, _ = json.Marshal(cn)
		cn["reason"] = "Returned one unit, damaged"
		changed, _ = json.Marshal(cn)
	}
	return body, changed
}

// faultKind is a fault the scheduler injects.
type faultKind string

const (
	faultKill         faultKind = "worker SIGKILL"
	faultTerm         faultKind = "worker SIGTERM"
	faultNATSRestart  faultKind = "NATS SIGTERM+restart"
	faultNATSKill     faultKind = "NATS SIGKILL+restart"
	faultPGCrash      faultKind = "Postgres crash+restart"
	faultPauseReceive faultKind = "receiver pause"
	// On a cluster only.
	faultLeaderKill faultKind = "NATS stream leader SIGKILL+restart"
	faultNodeStop   faultKind = "NATS node SIGSTOP+SIGCONT"
)

// clusterOnly reports whether the kind needs a NATS cluster.
func (k faultKind) clusterOnly() bool { return k == faultLeaderKill || k == faultNodeStop }

// natsNode reports whether the kind takes a NATS server down: on a
// cluster, one node at a time.
func (k faultKind) natsNode() bool {
	return k == faultNATSRestart || k == faultNATSKill || k.clusterOnly()
}

// FaultKinds names the fault kinds for Config.FaultKinds. On a cluster,
// nats-term and nats-kill restart one node; leader-kill and node-stop need
// one.
var FaultKinds = map[string]faultKind{
	"kill": faultKill, "term": faultTerm, "nats-term": faultNATSRestart, "nats-kill": faultNATSKill,
	"pg-crash": faultPGCrash, "pause": faultPauseReceive, "leader-kill": faultLeaderKill, "node-stop": faultNodeStop,
}

// leaderStreams are the streams whose leaders leader-kill faults kill, in
// turn: the commands' and the events'.
var leaderStreams = []string{consumer.DefaultStream, outbox.StreamName}

// fault is one scheduled fault.
type fault struct {
	at     time.Duration // from the start of the load phase
	kind   faultKind
	worker int
	hold   time.Duration // downtime or pause
	// On a cluster: the node a NATS restart strikes, and the node stopped
	// when the worker's own cannot be told.
	node int
	// stream is the stream whose leader a leader-kill kills.
	stream string
}

// schedule draws n faults over the fault window from the seed, of the
// kinds in only (all when empty), each kind at least once when n allows.
// Postgres crashes are only drawn when the suite may restart the server,
// leader kills and node stops only on a cluster (nodes > 1), where the
// first leader kills are one of each stream in leaderStreams.
func schedule(seed uint64, n, workers, nodes int, window time.Duration, pgRestart bool, only []string) []fault {
	rng := rand.New(rand.NewPCG(seed, 0x6661756c74))
	kinds := []faultKind{faultKill, faultTerm, faultNATSRestart, faultNATSKill, faultPGCrash, faultPauseReceive, faultLeaderKill, faultNodeStop}
	weights := []int{48, 14, 6, 6, 14, 12, 8, 6}
	if len(only) > 0 {
		for i, k := range kinds {
			if !slices.ContainsFunc(only, func(name string) bool { return FaultKinds[name] == k }) {
				weights[i] = 0
			}
		}
	}
	if !pgRestart {
		weights[4] = 0
	}
	if nodes < 2 {
		weights[6], weights[7] = 0, 0
	}
	if slices.Max(weights) == 0 {
		return nil
	}
	p := &planner{rng: rng}
	out := make([]fault, n)
	const lead = 3 * time.Second
	if window < 2*lead {
		window = 2 * lead
	}
	// The first faults are each kind that may be drawn, once, in an order
	// of the seed's: a plan of at least that many faults proves every
	// kind, however short. The rest are drawn by weight.
	var each []faultKind
	for i, k := range kinds {
		if weights[i] > 0 {
			each = append(each, k)
			if k == faultLeaderKill {
				// One per stream.
				for range len(leaderStreams) - 1 {
					each = append(each, k)
				}
			}
		}
	}
	rng.Shuffle(len(each), func(i, j int) { each[i], each[j] = each[j], each[i] })
	leaderKills := 0
	for i := range out {
		f := fault{
			at:     lead + time.Duration(rng.Int64N(int64(window-lead))),
			worker: rng.IntN(workers),
		}
		if i < len(each) {
			f.kind = each[i]
		} else {
			f.kind = kinds[p.weighted(weights...)]
		}
		switch f.kind {
		case faultNATSRestart, faultNATSKill, faultPGCrash:
			f.hold = time.Duration(300+rng.IntN(2700)) * time.Millisecond
		case faultPauseReceive:
			f.hold = time.Duration(2000+rng.IntN(6000)) * time.Millisecond
		case faultLeaderKill:
			f.hold = time.Duration(5000+rng.IntN(3000)) * time.Millisecond
			f.stream = leaderStreams[leaderKills%len(leaderStreams)]
			leaderKills++
		case faultNodeStop:
			f.hold = time.Duration(10000+rng.IntN(4000)) * time.Millisecond
		}
		if nodes > 1 {
			// Drawn only on a cluster: one server's plan stays what it was.
			f.node = rng.IntN(nodes)
		}
		out[i] = f
	}
	slices.SortFunc(out, func(a, b fault) int { return cmp.Compare(a.at, b.at) })
	return out
}
