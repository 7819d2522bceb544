package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

// The books, modelled in integer cents, independently of the ledger's code:
// what every account must hold and every invoice must show after any
// sequence of commands, retries and duplicates.
type booksModel struct {
	accounts map[string]int64 // debit − credit, cents
	invoices []*modelInvoice
	results  map[string]modelCall // idempotency key → first call and its result
	payments int
}

type modelInvoice struct {
	order, number      string
	lines              []modelLine
	gross              int64
	credited, paid     int64
	toCredit           int64              // credited beyond what was open: the customer's credit
	creditedByRate     map[int64][2]int64 // rate → net, VAT credited
	netByRate          map[int64][2]int64 // rate → net, VAT invoiced
	fullyCreditedLines bool
}

type modelLine struct {
	qty, priceCents, rate int64
	credited              bool
}

type modelCall struct {
	command string
	body    []byte
	result  protocol.Result
}

// halfUp divides a non-negative numerator by 100, rounding half up: the
// ledger's rule for VAT in cents at an integer rate.
func halfUp(n int64) int64 { return (n + 50) / 100 }

func (inv *modelInvoice) open() int64 { return inv.gross - inv.credited - inv.paid + inv.toCredit }

// credit books a credit of amount: what is open is taken off receivables,
// the rest becomes the customer's credit.
func (m *booksModel) credit(inv *modelInvoice, amount int64) {
	fromAR := min(amount, max(inv.open(), 0))
	inv.credited += amount
	inv.toCredit += amount - fromAR
	m.accounts["1200"] -= fromAR
	m.accounts["2200"] -= amount - fromAR
}

func (inv *modelInvoice) status() string {
	netPaid := inv.paid - inv.toCredit
	switch {
	case inv.credited >= inv.gross && netPaid == 0:
		return ledger.InvoiceCredited
	case inv.open() <= 0:
		return ledger.InvoicePaid
	case netPaid > 0:
		return ledger.InvoicePartiallyPaid
	}
	return ledger.InvoiceOpen
}

func cents(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

func TestBooksMatchAModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	var seq atomic.Int64
	k := allKinds(t)

	rapid.Check(t, func(rt *rapid.T) {
		company := fmt.Sprintf("prop-%d", seq.Add(1))
		m := &booksModel{accounts: map[string]int64{}, results: map[string]modelCall{}}
		keyN := 0

		send := func(command, key string, body any) (consumer.Outcome, protocol.Result) {
			raw, err := json.Marshal(body)
			if err != nil {
				rt.Fatal(err)
			}
			return process(ctx, rt, pool, k, company, command, key, raw)
		}
		fresh := func() string { keyN++; return fmt.Sprintf("k-%d", keyN) }

		if _, res := send("company.create", "setup", map[string]any{"name": "P", "country": "LT", "currency": "EUR"}); res.Status != protocol.StatusOK {
			rt.Fatalf("company.create: %+v", res.Error)
		}

		rt.Repeat(map[string]func(*rapid.T){
			"invoice": func(rt *rapid.T) {
				n := rapid.IntRange(1, 3).Draw(rt, "lines")
				inv := &modelInvoice{order: fmt.Sprintf("o-%d", len(m.invoices)+1), creditedByRate: map[int64][2]int64{}, netByRate: map[int64][2]int64{}}
				var lines []any
				for range n {
					l := modelLine{
						qty:        int64(rapid.IntRange(1, 5).Draw(rt, "qty")),
						priceCents: int64(rapid.IntRange(1, 99999).Draw(rt, "price")),
						rate:       rapid.SampledFrom([]int64{0, 5, 12, 21}).Draw(rt, "rate"),
					}
					inv.lines = append(inv.lines, l)
					line := map[string]any{"description": "item", "quantity": fmt.Sprint(l.qty),
						"unit_price": cents(l.priceCents), "vat_rate": fmt.Sprint(l.rate)}
					if l.rate == 0 {
						line["vat_treatment"] = "exempt" // a 0 % sale at home states why
					}
					lines = append(lines, line)
				}
				key := fresh()
				body := map[string]any{"order_id": inv.order, "customer": map[string]any{"id": "cust", "name": "C", "country": "LT"},
					"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-30", "lines": lines}
				_, res := send("invoice.create", key, body)
				if res.Status != protocol.StatusOK {
					rt.Fatalf("invoice.create: %+v", res.Error)
				}
				var net, vat int64
				for _, l := range inv.lines {
					ln := l.qty * l.priceCents
					lv := halfUp(ln * l.rate)
					net, vat = net+ln, vat+lv
					r := inv.netByRate[l.rate]
					inv.netByRate[l.rate] = [2]int64{r[0] + ln, r[1] + lv}
				}
				inv.gross = net + vat
				var v ledger.InvoiceView
				mustUnmarshal(rt, res.Result, &v)
				if v.Gross != cents(inv.gross) || v.Sequence != int64(len(m.invoices)+1) {
					rt.Fatalf("invoice %s gross %s sequence %d, model %s and %d", v.Number, v.Gross, v.Sequence, cents(inv.gross), len(m.invoices)+1)
				}
				inv.number = v.Number
				m.invoices = append(m.invoices, inv)
				m.accounts["1200"] += inv.gross
				m.accounts["4000"] -= net
				m.accounts["2300"] -= vat
				raw, _ := json.Marshal(body)
				m.results[key] = modelCall{"invoice.create", raw, res}
			},
			"retry": func(rt *rapid.T) {
				if len(m.results) == 0 {
					rt.Skip("nothing to retry")
				}
				key := rapid.SampledFrom(sortedKeys(m.results)).Draw(rt, "key")
				call := m.results[key]
				outcome, res := process(ctx, rt, pool, k, company, call.command, key, call.body)
				if outcome != consumer.Replayed || !res.Replayed {
					rt.Fatalf("retry of %s: %s", key, outcome)
				}
				first := call.result
				first.Replayed = true
				if a, b := mustMarshalR(rt, res), mustMarshalR(rt, first); a != b {
					rt.Fatalf("replay differs:\n%s\n%s", a, b)
				}
			},
			"reuse key with another payload": func(rt *rapid.T) {
				if len(m.results) == 0 {
					rt.Skip("no key to reuse")
				}
				key := rapid.SampledFrom(sortedKeys(m.results)).Draw(rt, "key")
				outcome, res := send("payment.record", key, map[string]any{"payment_ref": "never", "customer_id": "cust",
					"received_on": "2026-12-02", "currency": "EUR", "amount": "1.00"})
				if outcome != consumer.Reused || res.Error == nil || res.Error.Message != protocol.MessageKeyReused {
					rt.Fatalf("reused key %s: %s %+v", key, outcome, res)
				}
			},
			"duplicate order under a fresh key": func(rt *rapid.T) {
				if len(m.invoices) == 0 {
					rt.Skip("no invoice")
				}
				inv := rapid.SampledFrom(m.invoices).Draw(rt, "invoice")
				key := fresh()
				body := map[string]any{"order_id": inv.order, "customer": map[string]any{"id": "cust", "name": "C", "country": "LT"},
					"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-30",
					"lines": []any{map[string]any{"description": "again", "quantity": "1", "unit_price": "1.00", "vat_rate": "21"}}}
				_, res := send("invoice.create", key, body)
				if res.Error == nil || res.Error.Code != ledger.CodeDuplicateDocument || res.Error.Details["number"] != inv.number {
					rt.Fatalf("second invoice for %s: %+v", inv.order, res)
				}
				raw, _ := json.Marshal(body)
				m.results[key] = modelCall{"invoice.create", raw, res}
			},
			"credit a line": func(rt *rapid.T) {
				if len(m.invoices) == 0 {
					rt.Skip("no invoice")
				}
				inv := rapid.SampledFrom(m.invoices).Draw(rt, "invoice")
				line := rapid.IntRange(1, len(inv.lines)).Draw(rt, "line")
				l := inv.lines[line-1]
				key := fresh()
				body := map[string]any{"invoice_number": inv.number, "issue_date": "2026-12-03", "reason": "r",
					"lines": []any{map[string]any{"line": line, "quantity": fmt.Sprint(l.qty)}}}
				_, res := send("credit_note.create", key, body)
				net, vat := l.qty*l.priceCents, halfUp(l.qty*l.priceCents*l.rate)
				done := inv.creditedByRate[l.rate]
				avail := inv.netByRate[l.rate]
				if inv.fullyCreditedLines || l.credited || done[0]+net > avail[0] || done[1]+vat > avail[1] {
					if res.Error == nil || res.Error.Code != ledger.CodeConflict {
						rt.Fatalf("over-credit of %s line %d accepted: %+v", inv.number, line, res)
					}
					return
				}
				if res.Status != protocol.StatusOK {
					rt.Fatalf("credit of %s line %d: %+v", inv.number, line, res.Error)
				}
				inv.lines[line-1].credited = true
				inv.creditedByRate[l.rate] = [2]int64{done[0] + net, done[1] + vat}
				m.credit(inv, net+vat)
				m.accounts["4000"] += net
				m.accounts["2300"] += vat
				raw, _ := json.Marshal(body)
				m.results[key] = modelCall{"credit_note.create", raw, res}
			},
			"credit the rest": func(rt *rapid.T) {
				if len(m.invoices) == 0 {
					rt.Skip("no invoice")
				}
				inv := rapid.SampledFrom(m.invoices).Draw(rt, "invoice")
				key := fresh()
				body := map[string]any{"invoice_number": inv.number, "issue_date": "2026-12-03", "reason": "r", "full": true}
				_, res := send("credit_note.create", key, body)
				var net, vat int64
				for rate, a := range inv.netByRate {
					c := inv.creditedByRate[rate]
					net, vat = net+a[0]-c[0], vat+a[1]-c[1]
					inv.creditedByRate[rate] = a
				}
				if net+vat == 0 {
					if res.Error == nil || res.Error.Code != ledger.CodeConflict {
						rt.Fatalf("crediting a fully credited invoice: %+v", res)
					}
					return
				}
				if res.Status != protocol.StatusOK {
					rt.Fatalf("full credit of %s: %+v", inv.number, res.Error)
				}
				inv.fullyCreditedLines = true
				m.credit(inv, net+vat)
				m.accounts["4000"] += net
				m.accounts["2300"] += vat
				raw, _ := json.Marshal(body)
				m.results[key] = modelCall{"credit_note.create", raw, res}
			},
			"payment": func(rt *rapid.T) {
				if len(m.invoices) == 0 {
					rt.Skip("no invoice")
				}
				inv := rapid.SampledFrom(m.invoices).Draw(rt, "invoice")
				alloc := int64(rapid.IntRange(1, int(max(inv.gross, 1))).Draw(rt, "allocation"))
				extra := int64(rapid.IntRange(0, 500).Draw(rt, "unapplied"))
				m.payments++
				key := fresh()
				body := map[string]any{"payment_ref": fmt.Sprintf("bank-%d", m.payments), "customer_id": "cust",
					"received_on": "2026-12-04", "currency": "EUR", "amount": cents(alloc + extra),
					"allocations": []any{map[string]any{"invoice_number": inv.number, "amount": cents(alloc)}}}
				_, res := send("payment.record", key, body)
				if alloc > inv.open() {
					if res.Error == nil || res.Error.Code != ledger.CodeConflict {
						rt.Fatalf("payment of %s on %s with %s open accepted: %+v", cents(alloc), inv.number, cents(inv.open()), res)
					}
					return
				}
				if res.Status != protocol.StatusOK {
					rt.Fatalf("payment: %+v", res.Error)
				}
				inv.paid += alloc
				m.accounts["1100"] += alloc + extra
				m.accounts["1200"] -= alloc
				m.accounts["2200"] -= extra
				raw, _ := json.Marshal(body)
				m.results[key] = modelCall{"payment.record", raw, res}
			},
			"": func(rt *rapid.T) { checkBooks(ctx, rt, pool, company, m) },
		})
	})
}

// checkBooks compares the database with the model: account balances,
// invoice statuses, and a trial balance that nets to zero.
func checkBooks(ctx context.Context, rt *rapid.T, pool *pgxpool.Pool, company string, m *booksModel) {
	rows, err := pool.Query(ctx, `
		SELECT account_code, (sum(debit - credit) * 100)::bigint FROM journal_lines
		 WHERE company_id = $1 GROUP BY account_code`, company)
	if err != nil {
		rt.Fatal(err)
	}
	got := map[string]int64{}
	var total int64
	for rows.Next() {
		var acc string
		var bal int64
		if err := rows.Scan(&acc, &bal); err != nil {
			rt.Fatal(err)
		}
		got[acc] = bal
		total += bal
	}
	if total != 0 {
		rt.Fatalf("trial balance of %s is off by %s", company, cents(total))
	}
	for acc, want := range m.accounts {
		if got[acc] != want {
			rt.Fatalf("account %s holds %s, model %s", acc, cents(got[acc]), cents(want))
		}
	}
	for acc, bal := range got {
		if _, ok := m.accounts[acc]; !ok && bal != 0 {
			rt.Fatalf("account %s holds %s the model never posted", acc, cents(bal))
		}
	}
	for _, inv := range m.invoices {
		var gross, credited, paid string
		err := pool.QueryRow(ctx, `
			SELECT i.gross::text,
			       (SELECT coalesce(sum(gross), 0) FROM credit_notes WHERE invoice_id = i.id)::text,
			       ((SELECT coalesce(sum(amount), 0) FROM payment_allocations WHERE invoice_id = i.id)
			        - (SELECT coalesce(sum(amount), 0) FROM customer_credit_movements WHERE invoice_id = i.id))::text
			  FROM invoices i WHERE company_id = $1 AND number = $2`, company, inv.number).Scan(&gross, &credited, &paid)
		if err != nil {
			rt.Fatal(err)
		}
		status := ledger.InvoiceStatus(ledger.D(gross).Decimal, ledger.D(credited).Decimal, ledger.D(paid).Decimal)
		if status != inv.status() {
			rt.Fatalf("invoice %s is %s, model %s (gross %s credited %s paid %s)", inv.number, status, inv.status(), gross, credited, paid)
		}
	}
}

// process runs one command through the inbox in its own transaction, as
// the worker does for a delivery.
func process(ctx context.Context, rt *rapid.T, pool *pgxpool.Pool, k *exec.Kinds, company, command, key string, body []byte) (consumer.Outcome, protocol.Result) {
	req, perr := consumer.NewRequest(company, command, key, body)
	if perr != nil {
		rt.Fatalf("%s: %v", command, perr)
	}
	answers, err := consumer.Execute(ctx, pool, k, []*consumer.Request{req})
	if err == nil {
		err = answers[0].Err
	}
	if err != nil {
		rt.Fatalf("%s %s: %v", command, key, err)
	}
	return answers[0].Outcome, answers[0].Result
}

func sortedKeys(m map[string]modelCall) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

func mustUnmarshal(rt *rapid.T, raw []byte, v any) {
	if err := json.Unmarshal(raw, v); err != nil {
		rt.Fatal(err)
	}
}

func mustMarshalR(rt *rapid.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		rt.Fatal(err)
	}
	return string(b)
}
