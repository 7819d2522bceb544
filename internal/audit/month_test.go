package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/audit/audittest"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
)

// buildMonth posts a month of company "month" with every document kind
// and every VAT treatment through the inbox: sales at each treatment,
// purchases at each (reverse charges from EU and domestic suppliers, one
// with standard and reverse-charged lines together, one in dollars), an
// invoice in yen converted at a recorded rate, paid at another rate,
// credited after it was paid (so the credit goes to the customer), that
// credit applied to another invoice in yen and partly refunded at a third
// rate, a provider payment with its payout, an asset and its depreciation,
// and a webhook.test to an endpoint filtered to invoices while another
// endpoint takes every event. It returns the results by key.
func buildMonth(t *testing.T, pool *pgxpool.Pool) map[string]protocol.Result {
	t.Helper()
	const co = "month"
	results := map[string]protocol.Result{}
	do := func(command, key string, body any) {
		t.Helper()
		res := audittest.Process(t, pool, co, command, key, body)
		if res.Status != protocol.StatusOK {
			t.Fatalf("%s %s: status %s %+v", command, key, res.Status, res.Error)
		}
		results[key] = res
	}
	line := func(price, rate, treatment string) map[string]any {
		l := map[string]any{"description": "Goods", "quantity": "2", "unit_price": price, "vat_rate": rate}
		if treatment != "" {
			l["vat_treatment"] = treatment
		}
		return l
	}
	invoice := func(order, currency, day string, customer map[string]any, lines ...any) map[string]any {
		return map[string]any{"order_id": order, "series": "INV", "customer": customer, "currency": currency,
			"issue_date": day, "due_date": "2026-12-31", "lines": lines}
	}
	purchase := func(number, currency string, supplier map[string]any, lines ...any) map[string]any {
		return map[string]any{"supplier": supplier, "document_number": number, "issue_date": "2026-12-04",
			"due_date": "2026-12-31", "currency": currency, "lines": lines}
	}
	lt := map[string]any{"id": "c-lt", "name": "UAB Pirkėjas", "vat_id": "LT100000000010", "country": "LT"}
	de := map[string]any{"id": "c-de", "name": "Käufer GmbH", "vat_id": "DE123456789", "country": "DE"}
	us := map[string]any{"id": "c-us", "name": "Buyer Inc", "country": "US"}
	jp := map[string]any{"id": "c-jp", "name": "Kaite KK", "country": "JP"}
	supLT := map[string]any{"id": "s-lt", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT"}
	supDE := map[string]any{"id": "s-de", "name": "Lieferant GmbH", "vat_id": "DE987654321", "country": "DE"}

	do("company.create", "setup", map[string]any{"name": "Month UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000030"})
	do("webhook_endpoint.create", "hook-all", map[string]any{"url": "https://hooks.example.com/all"})
	do("webhook_endpoint.create", "hook-invoices",
		map[string]any{"url": "https://hooks.example.com/invoices", "event_types": []string{"invoice.created"}})
	do("fx_rate.record", "rate-jpy", map[string]any{"currency": "JPY", "date": "2026-12-01", "rate": "162.50", "source": "ECB"})

	do("invoice.create", "inv-standard", invoice("o-std", "EUR", "2026-12-02", lt,
		line("35.00", "21", ""), line("10.00", "12", "standard"), line("7.45", "5", "standard")))
	do("invoice.create", "inv-exempt", invoice("o-exempt", "EUR", "2026-12-02", lt, line("50.00", "0", "exempt")))
	do("invoice.create", "inv-export", invoice("o-export", "EUR", "2026-12-02", us, line("60.00", "0", "")))
	do("invoice.create", "inv-eu", invoice("o-eu", "EUR", "2026-12-02", de, line("70.00", "0", "intra_eu_goods")))
	do("invoice.create", "inv-other", invoice("o-other", "EUR", "2026-12-02", lt, line("80.00", "0", "other_zero")))
	do("invoice.create", "inv-jpy", invoice("o-jpy", "JPY", "2026-12-03", jp, line("5000", "21", "")))
	do("invoice.create", "inv-jpy-2", invoice("o-jpy-2", "JPY", "2026-12-03", jp, line("3333", "21", "")))

	do("credit_note.create", "cn-lines", map[string]any{"invoice_number": "INV-2026-000001", "series": "CN",
		"issue_date": "2026-12-04", "reason": "one returned", "lines": []any{map[string]any{"line": 1, "quantity": "1"}}})
	do("payment.record", "pay-jpy", map[string]any{"payment_ref": "jp-1", "customer_id": "c-jp", "received_on": "2026-12-05",
		"method": "bank", "currency": "JPY", "amount": "12100", "exchange_rate": "165.00",
		"allocations": []any{map[string]any{"invoice_number": "INV-2026-000006", "amount": "12100"}}})
	do("credit_note.create", "cn-paid", map[string]any{"invoice_number": "INV-2026-000006", "series": "CN",
		"issue_date": "2026-12-06", "reason": "cancelled after payment", "full": true})
	do("customer_credit.apply", "apply-jpy", map[string]any{"customer_id": "c-jp", "invoice_number": "INV-2026-000007",
		"amount": "5000", "applied_on": "2026-12-06"})
	do("customer_credit.refund", "refund-jpy", map[string]any{"refund_ref": "tr-jp", "customer_id": "c-jp",
		"currency": "JPY", "amount": "2000", "refunded_on": "2026-12-07", "exchange_rate": "160.00"})
	do("payment.record", "pay-provider", map[string]any{"payment_ref": "ch_m", "customer_id": "c-lt", "received_on": "2026-12-05",
		"method": "provider", "currency": "EUR", "amount": "110.00",
		"allocations": []any{map[string]any{"invoice_number": "INV-2026-000002", "amount": "100.00"}}})
	do("settlement.record", "payout", map[string]any{"provider": "stripe", "payout_id": "po_m", "payout_date": "2026-12-08",
		"currency": "EUR", "gross": "110.00", "fees": "1.10", "refunds": "0.00", "net": "108.90"})

	do("purchase_invoice.record", "buy-standard", purchase("S-1", "EUR", supLT, line("100.00", "21", "")))
	do("purchase_invoice.record", "buy-exempt", purchase("S-2", "EUR", supLT, line("40.00", "0", "exempt")))
	do("purchase_invoice.record", "buy-other", purchase("S-3", "EUR", supLT, line("30.00", "0", "other_zero")))
	do("purchase_invoice.record", "buy-eu-goods", purchase("G-1", "EUR", supDE, line("35.00", "21", "reverse_charge_eu_goods")))
	do("purchase_invoice.record", "buy-eu-services", purchase("G-2", "EUR", supDE, line("20.00", "12", "reverse_charge_eu_services")))
	do("purchase_invoice.record", "buy-domestic", purchase("S-4", "EUR", supLT,
		line("25.00", "21", "reverse_charge_domestic"), line("12.50", "21", "standard")))
	usd := purchase("G-3", "USD", supDE, map[string]any{"description": "Licence",
		"quantity": "1", "unit_price": "99.99", "vat_rate": "21", "vat_treatment": "reverse_charge_eu_services", "account": "6000"})
	usd["exchange_rate"] = "1.0437"
	do("purchase_invoice.record", "buy-usd", usd)
	do("purchase_invoice.record", "buy-asset", purchase("S-5", "EUR", supLT, map[string]any{"description": "Laptop",
		"quantity": "1", "unit_price": "1200.00", "vat_rate": "21", "account": "1500"}))
	do("asset.register", "asset", map[string]any{"asset_id": "laptop-m", "description": "Laptop", "acquisition_date": "2026-12-04",
		"currency": "EUR", "cost": "1200.00", "residual_value": "0.00", "useful_life_months": 24,
		"depreciation_start": "same_month"}) // the month's books include its depreciation
	do("depreciation.run", "dep", map[string]any{"asset_id": "laptop-m", "period": "2026-12"})
	return results
}

// field returns a string field of a result.
func field(t *testing.T, results map[string]protocol.Result, key, name string) string {
	t.Helper()
	books := audittest.Books{"month": results}
	return books.Field(t, "month", key, name)
}

// sendTest sends a webhook.test to the endpoint filtered to invoices and
// returns the test event's ID.
func sendTest(t *testing.T, pool *pgxpool.Pool, results map[string]protocol.Result) uuid.UUID {
	t.Helper()
	endpoint, err := uuid.Parse(field(t, results, "hook-invoices", "endpoint_id"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhooks.SendTest(context.Background(), pool, "month", endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return d.EventID
}

func TestAMonthOfEveryKindAndTreatmentAuditsClean(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	results := buildMonth(t, pool)
	sendTest(t, pool, results)

	// Every treatment is on a line, and the exchange differences were made.
	treatments := count(t, pool, `SELECT count(DISTINCT vat_treatment) FROM (
		SELECT vat_treatment FROM invoice_lines UNION ALL SELECT vat_treatment FROM purchase_invoice_lines) x`)
	if treatments != 8 {
		t.Errorf("%d VAT treatments on lines, want all 8", treatments)
	}
	if n := count(t, pool, `SELECT count(*) FROM journal_lines WHERE account_code IN ('4900', '6900')`); n < 2 {
		t.Errorf("%d exchange difference lines, want some", n)
	}

	r, err := audit.Run(context.Background(), pool, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if names := failed(t, r); len(names) > 0 {
		var out bytes.Buffer
		r.WriteText(&out)
		t.Fatalf("a correct month fails %v:\n%s", names, out.String())
	}
	if c, _ := r.Check(audit.CheckDocumentTotals); c.Checked != count(t, pool,
		`SELECT (SELECT count(*) FROM invoices) + (SELECT count(*) FROM credit_notes) + (SELECT count(*) FROM purchase_invoices)`) {
		t.Errorf("document_totals checked %d documents", c.Checked)
	}
}

// Each fault is planted in the month's books, inside a transaction the
// audit reads and that is rolled back, and must be named by the check
// that owns it with what it found.
func TestPlantedFaultsInAMonthAreNamed(t *testing.T) {
	t.Parallel()
	pool := newPool(t)
	results := buildMonth(t, pool)
	testEvent := sendTest(t, pool, results)
	euGoods := field(t, results, "buy-eu-goods", "purchase_invoice_id")
	domestic := field(t, results, "buy-domestic", "purchase_invoice_id")
	standard := field(t, results, "buy-standard", "purchase_invoice_id")
	invEU := field(t, results, "inv-eu", "invoice_id")
	invJPY := field(t, results, "inv-jpy-2", "invoice_id")
	entryOf := func(table, id string) string {
		return fmt.Sprintf(`(SELECT journal_entry_id FROM %s WHERE id = '%s')`, table, id)
	}

	cases := []struct {
		name       string
		forge      []string
		check      string
		ref        string
		wantDetail string
	}{{
		name:       "a test event without its delivery",
		forge:      []string{fmt.Sprintf(`DELETE FROM webhook_deliveries WHERE event_id = '%s'`, testEvent)},
		check:      audit.CheckEventDeliveries,
		ref:        testEvent.String(),
		wantDetail: "(webhook.test, sequence",
	}, {
		name: "a reverse charge's assessed VAT owed to the supplier instead",
		forge: []string{
			`UPDATE journal_lines SET credit = credit + 14.70, credit_company = credit_company + 14.70
			  WHERE account_code = '2100' AND entry_id = ` + entryOf("purchase_invoices", euGoods),
			`DELETE FROM journal_lines WHERE account_code = '2300' AND entry_id = ` + entryOf("purchase_invoices", euGoods),
		},
		check:      audit.CheckDocumentTotals,
		ref:        euGoods,
		wantDetail: "credits 0.00 to 2300 where its reverse-charged lines assess VAT 14.70",
	}, {
		name: "a reverse charge's line filed as standard",
		forge: []string{fmt.Sprintf(`UPDATE purchase_invoice_lines SET vat_treatment = 'standard'
			WHERE purchase_invoice_id = '%s' AND vat_treatment = 'reverse_charge_domestic'`, domestic)},
		check:      audit.CheckDocumentTotals,
		ref:        domestic,
		wantDetail: "credits 10.50 to 2300 where its reverse-charged lines assess VAT 0.00",
	}, {
		name: "a standard purchase that assesses VAT",
		forge: []string{
			`UPDATE journal_lines SET credit = credit - 42.00, credit_company = credit_company - 42.00
			  WHERE account_code = '2100' AND entry_id = ` + entryOf("purchase_invoices", standard),
			`INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
			 VALUES (` + entryOf("purchase_invoices", standard) + `, 9, 'month', '2300', 'EUR', 0, 42.00, 0, 42.00)`,
		},
		check:      audit.CheckDocumentTotals,
		ref:        standard,
		wantDetail: "credits 42.00 to 2300 where its reverse-charged lines assess VAT 0.00",
	}, {
		name:       "euro printed in cents",
		forge:      []string{fmt.Sprintf(`UPDATE invoices SET net = net + 1, gross = gross + 1 WHERE id = '%s'`, invEU)},
		check:      audit.CheckDocumentTotals,
		ref:        invEU,
		wantDetail: "the document says net 141.00, VAT 0.00, gross 141.00 but its lines sum to net 140.00, VAT 0.00, gross 140.00",
	}, {
		name:       "yen printed in yen",
		forge:      []string{fmt.Sprintf(`UPDATE invoices SET net = net + 1, gross = gross + 1 WHERE id = '%s'`, invJPY)},
		check:      audit.CheckDocumentTotals,
		ref:        invJPY,
		wantDetail: "the document says net 6667, VAT 1400, gross 8067 but its lines sum to net 6666, VAT 1400, gross 8066",
	}}

	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *audit.Report
			err := forgeRollback(ctx, pool, c.forge, func(tx pgx.Tx) error {
				var err error
				r, err = audit.Run(ctx, tx, testOptions())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if names := failed(t, r); !slices.Contains(names, c.check) {
				t.Fatalf("violations in %v, want %s", names, c.check)
			}
			if !slices.ContainsFunc(r.Violations, func(v audit.Violation) bool {
				return v.Check == c.check && v.Ref == c.ref && strings.Contains(v.Detail, c.wantDetail)
			}) {
				t.Errorf("no %s violation of %s says %q: %+v", c.check, c.ref, c.wantDetail, r.Violations)
			}
		})
	}
}
