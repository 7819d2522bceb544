package consumer_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/protocol"
)

// The differential test: random sequences of every command kind, with
// retries, repeated keys in one batch, keys reused with another payload,
// keys held by another transaction, business errors of every kind and
// commands of several companies interleaved, run twice: in batches of
// random sizes, as group commit forms them, and one command per
// transaction. The books, the numbers, the entries, the inbox rows and
// their stored results, the events and the deliveries must come out the
// same, and so must every answer. Only what is random by design differs
// between the two runs (UUIDs, timestamps, the companies' names, which
// carry the run); the comparison names each UUID by what it identifies.

// delivery is one message of the sequence: a command of a logical company
// under a key. endpoint, when not zero, is the 1-based index of the
// webhook_endpoint.create delivery whose endpoint the body names (its ID
// is only known once that one ran, in each run its own).
type delivery struct {
	company, command, key string
	body                  map[string]any
	endpoint              int
	// held: another transaction holds the key while this is delivered.
	held bool
}

// sequence is a generated sequence and how the batched run cuts it.
type sequence struct {
	deliveries []delivery
	batches    []int // sizes, summing to len(deliveries)
}

var companies = []string{"acme", "beta", "ghost"} // ghost is never created

func genSequence(t *rapid.T) sequence {
	var s sequence
	// A rough idea of what exists, so that most references hit: the
	// companies whose company.create was sent, the invoice.create in series
	// INV sent for them, the assets registered.
	created := map[string]bool{}
	invoices := map[string]int{}
	var assets [][2]string
	var endpoints []int // indexes+1 of webhook_endpoint.create deliveries
	keyN := 0
	fresh := func(prefix string) string { keyN++; return fmt.Sprintf("%s-%d", prefix, keyN) }
	company := func(t *rapid.T) string { return rapid.SampledFrom(companies[:2]).Draw(t, "company") }
	money := func(t *rapid.T, label string, max int) string {
		c := rapid.IntRange(1, max).Draw(t, label)
		return fmt.Sprintf("%d.%02d", c/100, c%100)
	}
	date := func(t *rapid.T, label string) string {
		return fmt.Sprintf("2026-12-%02d", rapid.IntRange(1, 9).Draw(t, label))
	}
	number := func(t *rapid.T, c string) string {
		return fmt.Sprintf("INV-2026-%06d", rapid.IntRange(1, max(1, invoices[c])).Draw(t, "invoice"))
	}
	// Secrets the commands bring, sealed as the HTTP API seals them, so
	// both paths store the same ones.
	keys := testkeys.Keyring()
	secret := func(company string, n int) string {
		return keys.Seal(company, "whsec_"+base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("differential-secret-%012d", n))))
	}
	add := func(d delivery) { s.deliveries = append(s.deliveries, d) }
	// purchased are the supplier and number of each purchase sent, by
	// company, which payments and credits mostly name.
	purchased := map[string][][2]string{}
	purchase := func(t *rapid.T, c, supplier string) string {
		var own []string
		for _, p := range purchased[c] {
			if p[0] == supplier {
				own = append(own, p[1])
			}
		}
		if len(own) == 0 || rapid.IntRange(0, 3).Draw(t, "any document") == 0 {
			return fmt.Sprintf("D-%d", rapid.IntRange(1, 4).Draw(t, "document"))
		}
		return rapid.SampledFrom(own).Draw(t, "purchased document")
	}
	again := func(label string, held bool) func(*rapid.T) {
		return func(t *rapid.T) {
			if len(s.deliveries) == 0 {
				t.Skip("no delivery to repeat")
			}
			d := rapid.SampledFrom(s.deliveries).Draw(t, label)
			d.held = held
			add(d)
		}
	}

	actions := map[string]func(*rapid.T){
		"company": func(t *rapid.T) {
			c := rapid.SampledFrom(companies[:2]).Draw(t, "company")
			created[c] = true
			add(delivery{company: c, command: "company.create", key: fresh("co"),
				body: map[string]any{"name": "Company " + c, "country": "LT", "currency": "EUR"}})
		},
		"invoice": func(t *rapid.T) {
			c := rapid.SampledFrom([]string{"acme", "acme", "beta", "beta", "ghost"}).Draw(t, "company")
			var lines []any
			for range rapid.IntRange(1, 3).Draw(t, "lines") {
				line := map[string]any{
					"description": "item", "quantity": fmt.Sprint(rapid.IntRange(1, 3).Draw(t, "qty")),
					"unit_price": money(t, "price", 10000),
					"vat_rate":   rapid.SampledFrom([]string{"0", "5", "12", "21"}).Draw(t, "rate"),
				}
				if line["vat_rate"] == "0" {
					line["vat_treatment"] = "exempt" // a 0 % sale at home states why
				}
				lines = append(lines, line)
			}
			series := rapid.SampledFrom([]string{"INV", "INV", "INV", "INV", "INV", "CN", "ZZ"}).Draw(t, "series")
			if created[c] && series == "INV" {
				invoices[c]++
			}
			add(delivery{company: c, command: "invoice.create", key: fresh("inv"), body: map[string]any{
				"order_id": fmt.Sprintf("o%d", rapid.IntRange(1, 12).Draw(t, "order")),
				"series":   series,
				"customer": map[string]any{"id": rapid.SampledFrom([]string{"c1", "c1", "c2"}).Draw(t, "customer"), "name": "Customer", "country": "LT"},
				"currency": "EUR", "issue_date": date(t, "issued"), "due_date": "2026-12-31", "lines": lines,
			}})
		},
		"credit": func(t *rapid.T) {
			c := company(t)
			body := map[string]any{"invoice_number": number(t, c), "issue_date": date(t, "credited"), "reason": "returned"}
			switch rapid.IntRange(0, 2).Draw(t, "way") {
			case 0:
				body["full"] = true
			case 1:
				body["lines"] = []any{map[string]any{"line": rapid.IntRange(1, 2).Draw(t, "line"), "quantity": fmt.Sprint(rapid.IntRange(1, 2).Draw(t, "qty"))}}
			default:
				body["amounts"] = []any{map[string]any{"vat_rate": rapid.SampledFrom([]string{"21", "12"}).Draw(t, "rate"), "net": money(t, "net", 50000)}}
			}
			add(delivery{company: c, command: "credit_note.create", key: fresh("cn"), body: body})
		},
		"payment": func(t *rapid.T) {
			c := company(t)
			var allocs []any
			total := 0
			first := rapid.IntRange(1, max(1, invoices[c])).Draw(t, "invoice")
			for i := range rapid.IntRange(0, 2).Draw(t, "allocations") {
				cents := rapid.IntRange(1, 80000).Draw(t, "allocated")
				total += cents
				// Now and then an open invoice of the company's opening.
				number := fmt.Sprintf("INV-2026-%06d", first+i)
				if rapid.IntRange(0, 4).Draw(t, "of the opening") == 0 {
					number = fmt.Sprintf("OB-%d", i+1)
				}
				allocs = append(allocs, map[string]any{"invoice_number": number,
					"amount": fmt.Sprintf("%d.%02d", cents/100, cents%100)})
			}
			total += rapid.IntRange(0, 1).Draw(t, "unapplied") * rapid.IntRange(1, 5000).Draw(t, "extra")
			if total == 0 {
				total = 100
			}
			add(delivery{company: c, command: "payment.record", key: fresh("pay"), body: map[string]any{
				"payment_ref": fmt.Sprintf("ch%d", rapid.IntRange(1, 6).Draw(t, "ref")),
				"customer_id": rapid.SampledFrom([]string{"c1", "c1", "c2"}).Draw(t, "customer"),
				"received_on": date(t, "received"), "method": rapid.SampledFrom([]string{"bank", "provider"}).Draw(t, "method"),
				"currency": "EUR", "amount": fmt.Sprintf("%d.%02d", total/100, total%100), "allocations": allocs,
			}})
		},
		"settlement": func(t *rapid.T) {
			c := company(t)
			gross, fees := rapid.IntRange(100, 50000).Draw(t, "gross"), rapid.IntRange(0, 99).Draw(t, "fees")
			cents := func(n int) string {
				sign := ""
				if n < 0 {
					sign, n = "-", -n
				}
				return fmt.Sprintf("%s%d.%02d", sign, n/100, n%100)
			}
			// Refunds name a payment or a customer's credit, which may
			// not exist or not cover them.
			var items []any
			refunds := 0
			for range rapid.IntRange(0, 2).Draw(t, "refunds") {
				amount := rapid.IntRange(1, 3000).Draw(t, "refunded")
				item := map[string]any{"amount": cents(amount)}
				if rapid.Bool().Draw(t, "of a payment") {
					item["payment_ref"] = fmt.Sprintf("ch%d", rapid.IntRange(1, 6).Draw(t, "ref"))
				} else {
					item["customer_id"] = rapid.SampledFrom([]string{"c1", "c2"}).Draw(t, "customer")
				}
				items, refunds = append(items, item), refunds+amount
			}
			body := map[string]any{
				"provider": "stripe", "payout_id": fmt.Sprintf("po%d", rapid.IntRange(1, 4).Draw(t, "payout")),
				"payout_date": date(t, "paid out"), "currency": "EUR",
				"gross": cents(gross), "fees": cents(fees), "refunds": cents(refunds), "net": cents(gross - fees - refunds),
			}
			if len(items) > 0 {
				body["refund_items"] = items
			}
			add(delivery{company: c, command: "settlement.record", key: fresh("st"), body: body})
		},
		// A month closed between documents dated in it: the ones after
		// the close are refused, in a batch as one by one.
		"close period": func(t *rapid.T) {
			c := company(t)
			add(delivery{company: c, command: "period.close", key: fresh("pc"), body: map[string]any{
				"period": rapid.SampledFrom([]string{"2026-11", "2026-12", "2026-12", "2027-01", "2030-01"}).Draw(t, "period"),
			}})
		},
		// Rates recorded, and documents in yen converted at their own rate
		// or at a recorded one (or refused for want of one).
		"fx rate": func(t *rapid.T) {
			c := company(t)
			add(delivery{company: c, command: "fx_rate.record", key: fresh("fx"), body: map[string]any{
				"currency": "JPY", "date": date(t, "rate day"), "rate": fmt.Sprintf("%d.%02d", rapid.IntRange(150, 170).Draw(t, "yen"), rapid.IntRange(0, 99).Draw(t, "sen")),
				"source": "ECB",
			}})
		},
		"foreign invoice": func(t *rapid.T) {
			c := company(t)
			if created[c] {
				invoices[c]++
			}
			body := map[string]any{
				"order_id": fmt.Sprintf("fx%d", rapid.IntRange(1, 6).Draw(t, "order")), "series": "INV",
				"customer": map[string]any{"id": "c1", "name": "Customer", "country": "JP"},
				"currency": "JPY", "issue_date": date(t, "issued"), "due_date": "2026-12-31",
				"lines": []any{map[string]any{"description": "licence", "quantity": fmt.Sprint(rapid.IntRange(1, 3).Draw(t, "qty")),
					"unit_price": fmt.Sprint(rapid.IntRange(1, 20000).Draw(t, "yen price")), "vat_rate": rapid.SampledFrom([]string{"0", "21"}).Draw(t, "rate")}},
			}
			if rapid.Bool().Draw(t, "own rate") {
				body["exchange_rate"] = fmt.Sprintf("%d.%d", rapid.IntRange(150, 170).Draw(t, "own yen"), rapid.IntRange(0, 9).Draw(t, "own sen"))
			}
			add(delivery{company: c, command: "invoice.create", key: fresh("inv"), body: body})
		},
		// Money in yen at its own rate or a recorded one, paying yen
		// invoices booked at others (an exchange difference), with or
		// without a part left on the customer's credit, and that credit
		// used or refunded at yet another rate.
		"foreign payment": func(t *rapid.T) {
			c := company(t)
			paid := rapid.IntRange(1, 30000).Draw(t, "yen paid")
			body := map[string]any{
				"payment_ref": fmt.Sprintf("fxp%d", rapid.IntRange(1, 6).Draw(t, "ref")), "customer_id": "c1",
				"received_on": date(t, "received"), "currency": "JPY", "method": rapid.SampledFrom([]string{"bank", "provider"}).Draw(t, "method"),
				"amount":      fmt.Sprint(paid + rapid.IntRange(0, 1).Draw(t, "unapplied")*rapid.IntRange(1, 5000).Draw(t, "yen extra")),
				"allocations": []any{map[string]any{"invoice_number": number(t, c), "amount": fmt.Sprint(paid)}},
			}
			if rapid.Bool().Draw(t, "no allocation") {
				delete(body, "allocations")
			}
			if rapid.Bool().Draw(t, "own rate") {
				body["exchange_rate"] = fmt.Sprintf("%d.%d", rapid.IntRange(150, 170).Draw(t, "own yen"), rapid.IntRange(0, 9).Draw(t, "own sen"))
			}
			add(delivery{company: c, command: "payment.record", key: fresh("pay"), body: body})
		},
		"foreign payout": func(t *rapid.T) {
			c := company(t)
			gross, fees := rapid.IntRange(1, 30000).Draw(t, "yen gross"), rapid.IntRange(0, 99).Draw(t, "yen fees")
			body := map[string]any{
				"provider": "stripe", "payout_id": fmt.Sprintf("fxpo%d", rapid.IntRange(1, 4).Draw(t, "payout")), "payout_date": date(t, "paid out"),
				"currency": "JPY", "gross": fmt.Sprint(gross), "fees": fmt.Sprint(fees), "refunds": "0", "net": fmt.Sprint(gross - fees),
			}
			if rapid.Bool().Draw(t, "own rate") {
				body["exchange_rate"] = fmt.Sprintf("%d.%d", rapid.IntRange(150, 170).Draw(t, "own yen"), rapid.IntRange(0, 9).Draw(t, "own sen"))
			}
			add(delivery{company: c, command: "settlement.record", key: fresh("st"), body: body})
		},
		"foreign refund": func(t *rapid.T) {
			c := company(t)
			body := map[string]any{
				"refund_ref": fmt.Sprintf("fxr%d", rapid.IntRange(1, 4).Draw(t, "refund ref")), "customer_id": "c1",
				"currency": "JPY", "amount": fmt.Sprint(rapid.IntRange(1, 5000).Draw(t, "yen refunded")), "refunded_on": date(t, "refunded"),
			}
			if rapid.Bool().Draw(t, "own rate") {
				body["exchange_rate"] = fmt.Sprintf("%d.%d", rapid.IntRange(150, 170).Draw(t, "own yen"), rapid.IntRange(0, 9).Draw(t, "own sen"))
			}
			add(delivery{company: c, command: "customer_credit.refund", key: fresh("rf"), body: body})
		},
		"apply credit": func(t *rapid.T) {
			c := company(t)
			add(delivery{company: c, command: "customer_credit.apply", key: fresh("ap"), body: map[string]any{
				"customer_id": rapid.SampledFrom([]string{"c1", "c1", "c2"}).Draw(t, "customer"), "invoice_number": number(t, c),
				"amount": money(t, "applied", 2000), "applied_on": date(t, "applied on"),
			}})
		},
		"refund credit": func(t *rapid.T) {
			c := company(t)
			body := map[string]any{
				"refund_ref": fmt.Sprintf("tr%d", rapid.IntRange(1, 4).Draw(t, "refund ref")), "customer_id": rapid.SampledFrom([]string{"c1", "c1", "c2"}).Draw(t, "customer"),
				"currency": "EUR", "amount": money(t, "refunded", 2000), "refunded_on": date(t, "refunded on"),
			}
			if rapid.Bool().Draw(t, "names a payment") {
				body["payment_ref"] = fmt.Sprintf("ch%d", rapid.IntRange(1, 6).Draw(t, "ref"))
			}
			add(delivery{company: c, command: "customer_credit.refund", key: fresh("rf"), body: body})
		},
		// Uses of one customer's credit in a row, which a batch decides
		// together, each seeing what the ones before left.
		"credit use burst": func(t *rapid.T) {
			c := company(t)
			add(delivery{company: c, command: "payment.record", key: fresh("pay"), body: map[string]any{
				"payment_ref": fmt.Sprintf("prepaid-%d", keyN), "customer_id": "c1", "received_on": "2026-12-10",
				"currency": "EUR", "amount": money(t, "prepaid", 6000),
			}})
			for i := range rapid.IntRange(2, 4).Draw(t, "uses") {
				if rapid.Bool().Draw(t, "apply") {
					add(delivery{company: c, command: "customer_credit.apply", key: fresh("ap"), body: map[string]any{
						"customer_id": "c1", "invoice_number": number(t, c), "amount": money(t, "applied", 3000), "applied_on": "2026-12-10",
					}})
					continue
				}
				add(delivery{company: c, command: "customer_credit.refund", key: fresh("rf"), body: map[string]any{
					"refund_ref": fmt.Sprintf("burst-%d-%d", keyN, i), "customer_id": "c1",
					"currency": "EUR", "amount": money(t, "refunded", 3000), "refunded_on": "2026-12-10",
				}})
			}
		},
		"purchase": func(t *rapid.T) {
			c := company(t)
			// s1 and s1b are one supplier by its VAT id, and a document
			// number comes in several spellings: some purchases repeat a
			// document under a fresh key, in a batch or across batches.
			supplier := map[string]any{"id": rapid.SampledFrom([]string{"s1", "s1b", "s2"}).Draw(t, "supplier"), "name": "Supplier", "country": "LT"}
			if supplier["id"] != "s2" {
				supplier["vat_id"] = rapid.SampledFrom([]string{"LT200000000020", "lt 200 000 000 020"}).Draw(t, "vat id")
			}
			number := fmt.Sprintf(rapid.SampledFrom([]string{"D-%d", "d-%d", " D-%d", "D\u2013%d"}).Draw(t, "spelling"), rapid.IntRange(1, 4).Draw(t, "document"))
			purchased[c] = append(purchased[c], [2]string{supplier["id"].(string), number})
			add(delivery{company: c, command: "purchase_invoice.record", key: fresh("pi"), body: map[string]any{
				"supplier":        supplier,
				"document_number": number,
				"issue_date":      date(t, "issued"), "due_date": "2026-12-31", "currency": "EUR",
				"lines": []any{map[string]any{"description": "rent", "quantity": "1", "unit_price": money(t, "price", 100000), "vat_rate": "21"}},
			}})
		},
		// Payments to the purchases' suppliers by document number, some
		// beyond what is open or to a document that is not there; a
		// payment reference repeats under a fresh key.
		"supplier payment": func(t *rapid.T) {
			c := company(t)
			// In cents: what goes to the document and what is kept as credit.
			allocated, rest := rapid.IntRange(1, 150000).Draw(t, "allocated"), rapid.IntRange(0, 20000).Draw(t, "kept")
			cents := func(c int) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }
			body := map[string]any{
				"payment_ref": fmt.Sprintf("sp%d", rapid.IntRange(1, 4).Draw(t, "supplier payment ref")),
				"supplier_id": rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "paid supplier"),
				"paid_on":     date(t, "paid on"), "currency": "EUR", "amount": cents(allocated + rest),
			}
			if rapid.IntRange(0, 3).Draw(t, "allocates") > 0 {
				body["allocations"] = []any{map[string]any{
					"document_number": purchase(t, c, body["supplier_id"].(string)), "amount": cents(allocated)}}
			} else if rest == 0 {
				body["amount"] = cents(allocated)
			}
			add(delivery{company: c, command: "supplier_payment.record", key: fresh("sp"), body: body})
		},
		// An advance to a supplier, then uses of the company's credit with
		// it in a row, which a batch decides together: applied to the
		// purchases' documents (D-1 is also the opening's payable) or paid
		// back, some beyond what is kept or open; a refund reference
		// repeats under a fresh key.
		"use supplier credit": func(t *rapid.T) {
			c := company(t)
			supplier := rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "credited supplier")
			if rapid.Bool().Draw(t, "bought first") {
				number := fmt.Sprintf("B-%d", keyN)
				purchased[c] = append(purchased[c], [2]string{supplier, number})
				add(delivery{company: c, command: "purchase_invoice.record", key: fresh("pi"), body: map[string]any{
					"supplier": map[string]any{"id": supplier, "name": "Supplier", "country": "LT"}, "document_number": number,
					"issue_date": "2026-12-08", "due_date": "2026-12-31", "currency": "EUR",
					"lines": []any{map[string]any{"description": "rent", "quantity": "1", "unit_price": money(t, "bought", 20000), "vat_rate": "21"}},
				}})
			}
			add(delivery{company: c, command: "supplier_payment.record", key: fresh("sp"), body: map[string]any{
				"payment_ref": fmt.Sprintf("advance-%d", keyN), "supplier_id": supplier, "paid_on": "2026-12-09",
				"currency": "EUR", "amount": money(t, "advance", 30000),
			}})
			for range rapid.IntRange(1, 3).Draw(t, "supplier credit uses") {
				if rapid.Bool().Draw(t, "apply supplier credit") {
					add(delivery{company: c, command: "supplier_credit.apply", key: fresh("sa"), body: map[string]any{
						"supplier_id": supplier, "document_number": purchase(t, c, supplier),
						"amount": money(t, "supplier credit applied", 15000), "applied_on": "2026-12-10",
					}})
					continue
				}
				add(delivery{company: c, command: "supplier_credit.refund", key: fresh("sr"), body: map[string]any{
					"refund_ref": fmt.Sprintf("sr%d", rapid.IntRange(1, 3).Draw(t, "supplier refund ref")), "supplier_id": supplier,
					"currency": "EUR", "amount": money(t, "supplier credit refunded", 15000), "refunded_on": "2026-12-11",
				}})
			}
		},
		// Manual journal entries on accounts anyone may post to, some on
		// an account the chart does not have, and a reference repeats
		// under a fresh key.
		"journal entry": func(t *rapid.T) {
			c := company(t)
			amount := money(t, "journal amount", 50000)
			add(delivery{company: c, command: "journal_entry.record", key: fresh("je"), body: map[string]any{
				"entry_ref": fmt.Sprintf("je%d", rapid.IntRange(1, 4).Draw(t, "entry ref")), "date": date(t, "journal date"),
				"reason": "accrual", "currency": "EUR",
				"lines": []any{
					map[string]any{"account": rapid.SampledFrom([]string{"6000", "6100", "6900", "7777"}).Draw(t, "debited account"), "debit": amount},
					map[string]any{"account": rapid.SampledFrom([]string{"1100", "1100", "3000"}).Draw(t, "credited account"), "credit": amount},
				},
			}})
		},
		// Openings on 2026-11-01, before every other document's date, with
		// open receivables paid later by number, a payable D-1, which
		// shares its number with a purchase the supplier may send, mostly
		// a credit of c2's that payments' credits add to and applications
		// and refunds use, and mostly a credit with s1 or s2 that supplier
		// payments' credits add to; a second opening of a company is
		// refused.
		"opening": func(t *rapid.T) {
			c := company(t)
			cents := func(c int) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }
			r1, r2, p1 := rapid.IntRange(1, 90000).Draw(t, "receivable 1"), rapid.IntRange(1, 90000).Draw(t, "receivable 2"), rapid.IntRange(1, 90000).Draw(t, "payable")
			bank := p1 + rapid.IntRange(1, 500000).Draw(t, "bank")
			owed := rapid.IntRange(0, r1).Draw(t, "customer credit")
			advanced := rapid.IntRange(0, 50000).Draw(t, "supplier credit")
			body := map[string]any{
				"date": "2026-11-01",
				"lines": []any{
					map[string]any{"account": "1100", "debit": cents(bank)},
					map[string]any{"account": "3000", "credit": cents(bank + r1 + r2 - p1 - owed + advanced)},
				},
				"receivables": []any{
					map[string]any{"invoice_number": "OB-1", "customer_id": "c1", "issue_date": "2026-10-10", "currency": "EUR", "amount": cents(r1)},
					map[string]any{"invoice_number": "OB-2", "customer_id": rapid.SampledFrom([]string{"c1", "c2"}).Draw(t, "owing customer"),
						"issue_date": "2026-10-20", "due_date": "2026-11-19", "currency": "EUR", "amount": cents(r2)},
				},
				"payables": []any{
					map[string]any{"document_number": "D-1", "supplier_id": "s1", "issue_date": "2026-10-05", "currency": "EUR", "amount": cents(p1)},
				},
			}
			if owed > 0 {
				body["customer_credits"] = []any{map[string]any{"customer_id": "c2", "currency": "EUR", "amount": cents(owed)}}
			}
			if advanced > 0 {
				body["supplier_credits"] = []any{map[string]any{"supplier_id": rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "advanced supplier"),
					"currency": "EUR", "amount": cents(advanced)}}
			}
			add(delivery{company: c, command: "opening_balances.record", key: fresh("ob"), body: body})
		},
		// 2026's close: refused while a month of it is open, so mostly
		// after its months are closed in order (from October on: earlier
		// ones are closed by an opening or have nothing); then nothing more
		// is posted in 2026.
		"year close": func(t *rapid.T) {
			c := company(t)
			if rapid.IntRange(0, 2).Draw(t, "close the months first") > 0 {
				for _, m := range []string{"2026-10", "2026-11", "2026-12"} {
					add(delivery{company: c, command: "period.close", key: fresh("pc"), body: map[string]any{"period": m}})
				}
			}
			add(delivery{company: c, command: "year.close", key: fresh("yc"), body: map[string]any{"year": 2026}})
		},
		// December's revaluation, mostly with a closing rate recorded for
		// it first; a second one of the month is refused.
		"fx revalue": func(t *rapid.T) {
			c := company(t)
			if rapid.IntRange(0, 3).Draw(t, "closing rate") > 0 {
				add(delivery{company: c, command: "fx_rate.record", key: fresh("fx"), body: map[string]any{
					"currency": "JPY", "date": "2026-12-31", "rate": fmt.Sprintf("%d.%02d", rapid.IntRange(150, 170).Draw(t, "closing yen"), rapid.IntRange(0, 99).Draw(t, "closing sen")),
					"source": "ECB",
				}})
			}
			add(delivery{company: c, command: "fx.revalue", key: fresh("rv"), body: map[string]any{"month": "2026-12"}})
		},
		"asset": func(t *rapid.T) {
			c := company(t)
			ref := fmt.Sprintf("a%d", rapid.IntRange(1, 2).Draw(t, "asset"))
			if created[c] {
				assets = append(assets, [2]string{c, ref})
			}
			add(delivery{company: c, command: "asset.register", key: fresh("as"), body: map[string]any{
				"asset_id": ref, "description": "Laptop",
				"acquisition_date": "2026-11-15", "currency": "EUR", "cost": money(t, "cost", 500000),
				"residual_value": "0.00", "useful_life_months": rapid.IntRange(1, 36).Draw(t, "life"),
			}})
		},
		"depreciation": func(t *rapid.T) {
			c, ref := company(t), fmt.Sprintf("a%d", rapid.IntRange(1, 2).Draw(t, "asset"))
			if len(assets) > 0 && rapid.IntRange(0, 4).Draw(t, "registered") > 0 {
				a := rapid.SampledFrom(assets).Draw(t, "registered asset")
				c, ref = a[0], a[1]
			}
			add(delivery{company: c, command: "depreciation.run", key: fresh("dep"), body: map[string]any{
				"asset_id": ref,
				"period":   rapid.SampledFrom([]string{"2026-11", "2026-12", "2027-01", "2030-01"}).Draw(t, "period"),
			}})
		},
		"endpoint": func(t *rapid.T) {
			c := company(t)
			body := map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", keyN), "sealed_secret": secret(c, keyN)}
			if rapid.Bool().Draw(t, "filtered") {
				body["event_types"] = []string{rapid.SampledFrom([]string{"invoice.created", "payment.recorded", "webhook_endpoint.disabled"}).Draw(t, "type")}
			}
			add(delivery{company: c, command: "webhook_endpoint.create", key: fresh("ep"), body: body})
			endpoints = append(endpoints, len(s.deliveries))
		},
		"endpoint change": func(t *rapid.T) {
			if len(endpoints) == 0 {
				t.Skip("no endpoint yet")
			}
			ep := rapid.SampledFrom(endpoints).Draw(t, "endpoint")
			c := s.deliveries[ep-1].company
			if rapid.IntRange(0, 3).Draw(t, "other company") == 0 {
				c = map[string]string{"acme": "beta", "beta": "acme"}[c] // another company's endpoint: not found
			}
			var command string
			var body map[string]any
			switch rapid.IntRange(0, 2).Draw(t, "change") {
			case 0:
				command, body = "webhook_endpoint.disable", map[string]any{}
			case 1:
				command, body = "webhook_endpoint.update", map[string]any{"enable": true, "event_types": []string{}}
			default:
				command, body = "webhook_endpoint.rotate_secret", map[string]any{"sealed_secret": secret(c, 1000+keyN), "grace_period": "1h"}
			}
			add(delivery{company: c, command: command, key: fresh("ch"), body: body, endpoint: ep})
		},
		// Bursts: several commands of one kind for one invoice in a row,
		// which a batch decides together, each seeing the ones before.
		"payment burst": func(t *rapid.T) {
			c := company(t)
			number := number(t, c)
			for range rapid.IntRange(2, 4).Draw(t, "payments") {
				cents := rapid.IntRange(1, 60000).Draw(t, "paid")
				amount := fmt.Sprintf("%d.%02d", cents/100, cents%100)
				add(delivery{company: c, command: "payment.record", key: fresh("pay"), body: map[string]any{
					"payment_ref": fmt.Sprintf("burst-%d", keyN), "customer_id": "c1", "received_on": "2026-12-10",
					"currency": "EUR", "amount": amount, "allocations": []any{map[string]any{"invoice_number": number, "amount": amount}},
				}})
			}
		},
		"credit burst": func(t *rapid.T) {
			c := company(t)
			number := number(t, c)
			for range rapid.IntRange(2, 4).Draw(t, "credits") {
				body := map[string]any{"invoice_number": number, "issue_date": "2026-12-09", "reason": "returned"}
				if rapid.Bool().Draw(t, "by line") {
					body["lines"] = []any{map[string]any{"line": 1, "quantity": "1"}}
				} else {
					body["amounts"] = []any{map[string]any{"vat_rate": "21", "net": money(t, "net", 30000)}}
				}
				add(delivery{company: c, command: "credit_note.create", key: fresh("cn"), body: body})
			}
		},
		// A delivery again, as a redelivery would be, or while another
		// transaction holds its key.
		"retry": again("retried", false),
		"reuse": func(t *rapid.T) {
			if len(s.deliveries) == 0 {
				t.Skip("no key to reuse")
			}
			d := rapid.SampledFrom(s.deliveries).Draw(t, "reused")
			d.command, d.endpoint, d.held = "company.create", 0, false
			d.body = map[string]any{"name": "Reused " + d.key, "country": "LT", "currency": "EUR"}
			add(d)
		},
		"held": again("held", true),
	}
	// Most sequences open both companies' books first, so that documents
	// get posted and refer to each other; the others meet unknown_company.
	if rapid.IntRange(0, 4).Draw(t, "open books first") > 0 {
		actions["company"](t)
		actions["company"](t)
	}
	actions["late company"] = actions["company"]
	n := rapid.IntRange(10, 40).Draw(t, "deliveries")
	for len(s.deliveries) < n {
		name := rapid.SampledFrom([]string{"invoice", "invoice", "invoice", "credit", "credit", "payment", "payment", "payment",
			"settlement", "purchase", "purchase", "supplier payment", "use supplier credit", "use supplier credit", "journal entry", "opening", "fx revalue", "asset", "depreciation", "endpoint", "endpoint change", "endpoint change", "retry", "retry", "reuse", "held", "late company", "payment burst", "credit burst",
			"apply credit", "refund credit", "credit use burst", "close period", "year close", "fx rate", "foreign invoice", "foreign payment", "foreign refund", "foreign payout"}).Draw(t, "action")
		if name == "endpoint change" && len(endpoints) == 0 || slices.Contains([]string{"retry", "reuse", "held"}, name) && len(s.deliveries) == 0 {
			continue
		}
		actions[name](t)
	}

	// Batches of random sizes; a held key travels alone, and a change of
	// an endpoint comes after the batch that created it.
	for i := 0; i < len(s.deliveries); {
		size := rapid.IntRange(1, 12).Draw(t, "batch")
		j := i
		for j < len(s.deliveries) && j-i < size {
			d := s.deliveries[j]
			if d.held || (d.endpoint > i && d.endpoint <= j) {
				break
			}
			j++
		}
		if j == i {
			j = i + 1 // alone
		}
		s.batches = append(s.batches, j-i)
		i = j
	}
	return s
}

// run is one execution of a sequence, its companies named with prefix.
type run struct {
	t      *rapid.T
	ctx    context.Context
	pool   *pgxpool.Pool
	kinds  *exec.Kinds
	prefix string
	// answers, one per delivery, normalised, and results, as they came.
	answers []string
	results []protocol.Result
	// endpointIDs maps a webhook_endpoint.create delivery (1-based) to the
	// endpoint it created.
	endpointIDs map[int]string
	// fingerprints maps a fingerprint this run sent to the delivery it
	// first came with, which names it in the comparison.
	fingerprints map[string]string
}

// bogusEndpoint is the endpoint a change names when the one it refers to
// was never created.
const bogusEndpoint = "0193a0c4-0000-7000-8000-000000000000"

func (r *run) request(i int, d delivery) *consumer.Request {
	body := map[string]any{}
	for k, v := range d.body {
		body[k] = v
	}
	if d.endpoint > 0 {
		id, ok := r.endpointIDs[d.endpoint]
		if !ok {
			id = bogusEndpoint
		}
		body["endpoint_id"] = id
	}
	raw, err := json.Marshal(body)
	if err != nil {
		r.t.Fatal(err)
	}
	req, perr := consumer.NewRequest(r.prefix+d.company, d.command, d.key, raw)
	if perr != nil {
		r.t.Fatalf("delivery %d (%s): %v", i, d.command, perr)
	}
	req.StreamSequence = uint64(i + 1)
	if _, ok := r.fingerprints[hex.EncodeToString(req.Fingerprint)]; !ok {
		r.fingerprints[hex.EncodeToString(req.Fingerprint)] = fmt.Sprintf("fingerprint of delivery %d", i)
	}
	return req
}

// execute runs deliveries from..from+n in one transaction.
func (r *run) execute(s sequence, from, n int) {
	var reqs []*consumer.Request
	held := map[inbox.Key]bool{}
	for i := from; i < from+n; i++ {
		d := s.deliveries[i]
		req := r.request(i, d)
		reqs = append(reqs, req)
		if d.held {
			held[inbox.Key{Company: req.Company, Key: req.Key}] = true
		}
	}
	for k := range held {
		holder, err := r.pool.Begin(r.ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		defer holder.Rollback(r.ctx)
		if _, err := holder.Exec(r.ctx, `SELECT pg_advisory_xact_lock($1)`, inbox.LockID(k)); err != nil {
			r.t.Fatal(err)
		}
	}
	// A batch ends before a repeat that would have to run again, as the
	// batcher ends it.
	var answers []consumer.Answer
	for rest := reqs; len(rest) > 0; {
		cut := consumer.CutBeforeRerun(rest)
		a, err := consumer.Execute(r.ctx, r.pool, r.kinds, rest[:cut])
		if err != nil {
			r.t.Fatalf("batch of deliveries %d..%d: %v", from, from+n-1, err)
		}
		answers, rest = append(answers, a...), rest[cut:]
	}
	for j, a := range answers {
		i := from + j
		if a.Err != nil {
			r.t.Fatalf("delivery %d (%s %s): %v", i, s.deliveries[i].command, s.deliveries[i].key, a.Err)
		}
		if s.deliveries[i].command == "webhook_endpoint.create" && a.Result.Status == protocol.StatusOK && !a.Result.Replayed && a.Outcome == consumer.Executed {
			var v struct {
				EndpointID string `json:"endpoint_id"`
			}
			if err := json.Unmarshal(a.Result.Result, &v); err != nil {
				r.t.Fatal(err)
			}
			r.endpointIDs[i+1] = v.EndpointID
		}
		raw, err := json.Marshal(a.Result)
		if err != nil {
			r.t.Fatal(err)
		}
		r.answers = append(r.answers, a.Outcome.String()+" "+string(raw))
		r.results = append(r.results, a.Result)
	}
}

// tables dumps, as JSON rows, what a run's companies hold ($1: their ids,
// which every table's index on company_id finds, where a LIKE on the run's
// prefix would read every earlier run's rows too); the first column of each
// query names a row's UUID by what it identifies, for the renaming, and the
// second is the row.
var tables = []struct{ name, names, rows string }{
	{"companies", ``, `SELECT to_jsonb(t) - 'created_at' FROM companies t WHERE id = ANY($1)`},
	{"accounts", ``, `SELECT to_jsonb(t) FROM accounts t WHERE company_id = ANY($1)`},
	{"number_series", ``, `SELECT to_jsonb(t) FROM number_series t WHERE company_id = ANY($1)`},
	{"invoices", `SELECT id::text, 'invoice ' || company_id || ' ' || number FROM invoices WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM invoices t WHERE company_id = ANY($1)`},
	{"invoice_lines", ``, `SELECT to_jsonb(l) FROM invoice_lines l JOIN invoices i ON i.id = l.invoice_id WHERE i.company_id = ANY($1)`},
	{"credit_notes", `SELECT id::text, 'credit note ' || company_id || ' ' || number FROM credit_notes WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM credit_notes t WHERE company_id = ANY($1)`},
	{"credit_note_lines", ``, `SELECT to_jsonb(l) FROM credit_note_lines l JOIN credit_notes c ON c.id = l.credit_note_id WHERE c.company_id = ANY($1)`},
	{"payments", `SELECT id::text, 'payment ' || company_id || ' ' || payment_ref FROM payments WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM payments t WHERE company_id = ANY($1)`},
	{"payment_allocations", ``, `SELECT to_jsonb(a) FROM payment_allocations a JOIN payments p ON p.id = a.payment_id WHERE p.company_id = ANY($1)`},
	{"settlements", `SELECT id::text, 'settlement ' || company_id || ' ' || provider || ' ' || payout_id FROM settlements WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM settlements t WHERE company_id = ANY($1)`},
	{"purchase_invoices", `SELECT id::text, 'purchase ' || company_id || ' ' || supplier_id || ' ' || document_number FROM purchase_invoices WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM purchase_invoices t WHERE company_id = ANY($1)`},
	{"customer_credit_movements", `
		SELECT i.result -> 'result' ->> 'application_id', 'credit application of ' || i.company_id || ' ' || i.idempotency_key
		  FROM inbox i WHERE i.company_id = ANY($1) AND i.command = 'customer_credit.apply' AND i.status = 'ok'
		 UNION ALL
		SELECT i.result -> 'result' ->> 'refund_id', 'credit refund of ' || i.company_id || ' ' || i.idempotency_key
		  FROM inbox i WHERE i.company_id = ANY($1) AND i.command = 'customer_credit.refund' AND i.status = 'ok'
		 UNION ALL
		SELECT id::text, 'payout refund ' || source_id || ' ' || row_number() OVER (PARTITION BY source_id ORDER BY id)
		  FROM customer_credit_movements WHERE company_id = ANY($1) AND kind = 'settlement_refund'
		 UNION ALL
		SELECT id::text, 'opening credit ' || company_id || ' ' || customer_id || ' ' || currency
		  FROM customer_credit_movements WHERE company_id = ANY($1) AND kind = 'opening'`,
		`SELECT to_jsonb(t) - 'created_at' FROM customer_credit_movements t WHERE company_id = ANY($1)`},
	{"customer_credits", ``, `SELECT to_jsonb(t) FROM customer_credits t WHERE company_id = ANY($1)`},
	{"fx_rates", `SELECT id::text, 'rate ' || company_id || ' ' || currency || ' ' || rate_date FROM fx_rates WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' FROM fx_rates t WHERE company_id = ANY($1)`},
	{"period_closes", `SELECT id::text, 'close of ' || company_id || ' ' || period FROM period_closes WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'closed_at' FROM period_closes t WHERE company_id = ANY($1)`},
	{"supplier_payments", `SELECT id::text, 'supplier payment ' || company_id || ' ' || payment_ref FROM supplier_payments WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM supplier_payments t WHERE company_id = ANY($1)`},
	{"supplier_payment_allocations", ``, `SELECT to_jsonb(a) FROM supplier_payment_allocations a JOIN supplier_payments p ON p.id = a.payment_id WHERE p.company_id = ANY($1)`},
	// A supplier payment's movement has the payment's ID, named above.
	{"supplier_credit_movements", `
		SELECT i.result -> 'result' ->> 'application_id', 'supplier credit application of ' || i.company_id || ' ' || i.idempotency_key
		  FROM inbox i WHERE i.company_id = ANY($1) AND i.command = 'supplier_credit.apply' AND i.status = 'ok'
		 UNION ALL
		SELECT i.result -> 'result' ->> 'refund_id', 'supplier credit refund of ' || i.company_id || ' ' || i.idempotency_key
		  FROM inbox i WHERE i.company_id = ANY($1) AND i.command = 'supplier_credit.refund' AND i.status = 'ok'
		 UNION ALL
		SELECT id::text, 'opening supplier credit ' || company_id || ' ' || supplier_id || ' ' || currency
		  FROM supplier_credit_movements WHERE company_id = ANY($1) AND kind = 'opening'`,
		`SELECT to_jsonb(t) - 'created_at' FROM supplier_credit_movements t WHERE company_id = ANY($1)`},
	{"supplier_credits", ``, `SELECT to_jsonb(t) FROM supplier_credits t WHERE company_id = ANY($1)`},
	{"manual_journals", `SELECT id::text, 'manual journal ' || company_id || ' ' || entry_ref FROM manual_journals WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM manual_journals t WHERE company_id = ANY($1)`},
	{"opening_balances", `SELECT id::text, 'opening of ' || company_id FROM opening_balances WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM opening_balances t WHERE company_id = ANY($1)`},
	{"opening_items", `SELECT id::text, 'opening item ' || company_id || ' ' || kind || ' ' || party_id || ' ' || number FROM opening_items WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) FROM opening_items t WHERE company_id = ANY($1)`},
	{"opening_allocations", ``, `SELECT to_jsonb(a) FROM opening_allocations a JOIN opening_items o ON o.id = a.opening_item_id WHERE o.company_id = ANY($1)`},
	{"fx_revaluations", `SELECT id::text, 'revaluation ' || company_id || ' ' || month FROM fx_revaluations WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM fx_revaluations t WHERE company_id = ANY($1)`},
	{"year_closes", `SELECT id::text, 'year close ' || company_id || ' ' || year FROM year_closes WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM year_closes t WHERE company_id = ANY($1)`},
	{"purchase_invoice_lines", ``, `SELECT to_jsonb(l) FROM purchase_invoice_lines l JOIN purchase_invoices p ON p.id = l.purchase_invoice_id WHERE p.company_id = ANY($1)`},
	{"assets", `SELECT id::text, 'asset ' || company_id || ' ' || asset_ref FROM assets WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' FROM assets t WHERE company_id = ANY($1)`},
	{"depreciation_runs", `SELECT r.id::text, 'depreciation ' || a.company_id || ' ' || a.asset_ref || ' ' || r.period FROM depreciation_runs r JOIN assets a ON a.id = r.asset_id WHERE a.company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' FROM depreciation_runs t WHERE company_id = ANY($1)`},
	{"journal_entries", `SELECT id::text, 'entry of ' || source_id FROM journal_entries WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'created_xact' FROM journal_entries t WHERE company_id = ANY($1)`},
	{"journal_lines", ``, `SELECT to_jsonb(t) FROM journal_lines t WHERE company_id = ANY($1)`},
	{"webhook_endpoints", `SELECT i.result -> 'result' ->> 'endpoint_id', 'endpoint of ' || i.company_id || ' ' || i.idempotency_key
		  FROM inbox i WHERE i.company_id = ANY($1) AND i.command = 'webhook_endpoint.create' AND i.status = 'ok'`,
		`SELECT to_jsonb(t) - 'created_at' - 'updated_at' FROM webhook_endpoints t WHERE company_id = ANY($1)`},
	{"outbox_events", `SELECT id::text, 'event ' || company_id || ' ' || sequence FROM outbox_events WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' FROM outbox_events t WHERE company_id = ANY($1)`},
	{"outbox_pending", ``, `SELECT to_jsonb(p) FROM outbox_pending p JOIN outbox_events e ON e.id = p.event_id WHERE e.company_id = ANY($1)`},
	{"outbox_sequences", ``, `SELECT to_jsonb(t) FROM outbox_sequences t WHERE company_id = ANY($1)`},
	{"webhook_deliveries", `SELECT id::text, 'delivery of ' || event_id || ' to ' || endpoint_id FROM webhook_deliveries WHERE company_id = ANY($1)`,
		`SELECT to_jsonb(t) - 'created_at' - 'next_attempt_at' FROM webhook_deliveries t WHERE company_id = ANY($1)`},
	{"inbox", ``, `SELECT to_jsonb(t) - 'created_at' FROM inbox t WHERE company_id = ANY($1)`},
}

var (
	uuidPattern      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timestampPattern = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	hexPattern       = regexp.MustCompile(`\\\\x[0-9a-f]{64}`)
)

// dump returns the run's state, one sorted list of normalised rows per
// table, and its answers normalised the same way.
func (r *run) dump() (map[string][]string, []string) {
	names := map[string]string{}
	// Names refer to names (an entry to its document, a delivery to its
	// event and endpoint): resolve until nothing changes.
	var pairs [][2]string
	for _, tb := range tables {
		if tb.names == "" {
			continue
		}
		rows, err := r.pool.Query(r.ctx, tb.names, r.companyIDs())
		if err != nil {
			r.t.Fatalf("%s: %v", tb.name, err)
		}
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				r.t.Fatal(err)
			}
			pairs = append(pairs, [2]string{id, name})
		}
		if err := rows.Err(); err != nil {
			r.t.Fatal(err)
		}
	}
	for range 3 {
		for _, p := range pairs {
			names[p[0]] = r.normalise(p[1], names)
		}
	}
	state := map[string][]string{}
	for _, tb := range tables {
		rows, err := r.pool.Query(r.ctx, tb.rows, r.companyIDs())
		if err != nil {
			r.t.Fatalf("%s: %v", tb.name, err)
		}
		var out []string
		for rows.Next() {
			var row string
			if err := rows.Scan(&row); err != nil {
				r.t.Fatal(err)
			}
			out = append(out, r.normalise(row, names))
		}
		if err := rows.Err(); err != nil {
			r.t.Fatal(err)
		}
		slices.Sort(out)
		state[tb.name] = out
	}
	answers := make([]string, len(r.answers))
	for i, a := range r.answers {
		answers[i] = r.normalise(a, names)
	}
	return state, answers
}

// companyIDs are the ids the run's companies have in the books.
func (r *run) companyIDs() []string {
	ids := make([]string, len(companies))
	for i, c := range companies {
		ids[i] = r.prefix + c
	}
	return ids
}

func (r *run) normalise(s string, names map[string]string) string {
	s = uuidPattern.ReplaceAllStringFunc(s, func(id string) string {
		if n, ok := names[id]; ok {
			return n
		}
		return id
	})
	s = timestampPattern.ReplaceAllString(s, "<time>")
	// Fingerprints are bytea, as \\x<hex> in JSON text.
	s = hexPattern.ReplaceAllStringFunc(s, func(fp string) string {
		if n, ok := r.fingerprints[strings.TrimPrefix(fp, `\\x`)]; ok {
			return n
		}
		return fp
	})
	return strings.ReplaceAll(s, r.prefix, "")
}

func TestBatchesAndSingleCommandsGiveTheSameBooks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.Migrated(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	k := allKinds(t)
	var iteration atomic.Int64
	// What the sequences came to, by command and status or error code:
	// logged, so a change that leaves the test exercising nothing shows.
	var mu sync.Mutex
	seen := map[string]int{}
	t.Cleanup(func() {
		var lines []string
		for what, n := range seen {
			lines = append(lines, fmt.Sprintf("%6d %s", n, what))
		}
		slices.Sort(lines)
		t.Logf("answers of the single-command runs:\n%s", strings.Join(lines, "\n"))
	})

	rapid.Check(t, func(rt *rapid.T) {
		s := genSequence(rt)
		n := iteration.Add(1)
		newRun := func(prefix string) *run {
			return &run{t: rt, ctx: ctx, pool: pool, kinds: k, prefix: fmt.Sprintf("%s%d-", prefix, n),
				endpointIDs: map[int]string{}, fingerprints: map[string]string{}}
		}
		batched, single := newRun("batched"), newRun("single")
		for i, from := 0, 0; i < len(s.batches); from, i = from+s.batches[i], i+1 {
			batched.execute(s, from, s.batches[i])
		}
		for i := range s.deliveries {
			single.execute(s, i, 1)
		}
		bs, ba := batched.dump()
		ss, sa := single.dump()
		mu.Lock()
		for i, a := range single.results {
			what := a.Status
			if a.Error != nil {
				what = string(a.Error.Code)
			}
			seen[s.deliveries[i].command+" "+what]++
		}
		mu.Unlock()
		for i := range sa {
			if ba[i] != sa[i] {
				rt.Fatalf("delivery %d (%s %s %s) answered\n  in batches %v:\n    %s\n  one at a time:\n    %s",
					i, s.deliveries[i].company, s.deliveries[i].command, s.deliveries[i].key, s.batches, ba[i], sa[i])
			}
		}
		for _, tb := range tables {
			b, o := bs[tb.name], ss[tb.name]
			if !slices.Equal(b, o) {
				rt.Fatalf("%s differ (batches %v):\n  in batches:\n    %s\n  one at a time:\n    %s",
					tb.name, s.batches, strings.Join(b, "\n    "), strings.Join(o, "\n    "))
			}
		}
	})
}
