package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// run executes a command given as JSON and decodes its result into T.
func run[T any](t *testing.T, db *pgxpool.Pool, company, command string, body any) T {
	t.Helper()
	out, err := execute(t, db, company, decode(t, command, body))
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	var v T
	raw, _ := json.Marshal(out.Result)
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func runErr(t *testing.T, db *pgxpool.Pool, company, command string, body any, code ledger.Code) *ledger.Error {
	t.Helper()
	_, err := execute(t, db, company, decode(t, command, body))
	return requireError(t, err, code)
}

// accountBalance is debits minus credits on an account.
func accountBalance(t *testing.T, db *pgxpool.Pool, company, account string) string {
	t.Helper()
	var b string
	if err := db.QueryRow(testContext(t), `
		SELECT coalesce(sum(debit - credit), 0)::numeric(28,2)::text FROM journal_lines
		 WHERE company_id = $1 AND account_code = $2`, company, account).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A two-line invoice: 3 × 100.00 at 21% and 1 × 50.00 at 12% → 300 + 63,
// 50 + 6.00: gross 419.00.
func twoRateInvoice(order string) map[string]any {
	b := invoiceBody(order)
	b["lines"] = []any{
		map[string]any{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
		map[string]any{"description": "Accommodation", "quantity": "1", "unit_price": "50.00", "vat_rate": "12"},
	}
	return b
}

func TestCreditNotes(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", twoRateInvoice("o-1"))
	if inv.Gross != "419.00" {
		t.Fatalf("invoice gross %s", inv.Gross)
	}

	byLine := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-05", "reason": "one consulting hour not delivered",
		"lines": []any{map[string]any{"line": 1, "quantity": "1"}},
	})
	if byLine.Number != "CN-2026-000001" || byLine.Sequence != 1 || byLine.InvoiceNumber != inv.Number ||
		byLine.Net != "100.00" || byLine.VAT != "21.00" || byLine.Gross != "121.00" || byLine.InvoiceOpen != "298.00" || byLine.InvoiceStatus != ledger.InvoiceOpen {
		t.Fatalf("credit by line: %+v", byLine)
	}
	byAmount := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_id": inv.InvoiceID, "issue_date": "2026-12-06", "reason": "discount on the stay",
		"amounts": []any{map[string]any{"vat_rate": "12", "net": "10.00"}},
	})
	if byAmount.Number != "CN-2026-000002" || byAmount.Gross != "11.20" {
		t.Fatalf("credit by amount: %+v", byAmount)
	}
	// More than is left on a line, or at a rate: conflict, and no number burnt.
	e := runErr(t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-06", "reason": "x",
		"lines": []any{map[string]any{"line": 1, "quantity": "2.5"}},
	}, ledger.CodeConflict)
	if !strings.Contains(e.Message, "2 left to credit") {
		t.Fatalf("message: %s", e.Message)
	}
	runErr(t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-06", "reason": "x",
		"amounts": []any{map[string]any{"vat_rate": "12", "net": "40.01"}},
	}, ledger.CodeConflict)
	runErr(t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-06", "reason": "x",
		"amounts": []any{map[string]any{"vat_rate": "5", "net": "1.00"}},
	}, ledger.CodeConflict)
	runErr(t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": "INV-2026-999999", "issue_date": "2026-12-06", "reason": "x", "full": true,
	}, ledger.CodeNotFound)
	runErr(t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-11-30", "reason": "before the invoice", "full": true,
	}, ledger.CodeConflict)

	// The rest, in full: exactly what is left, to the cent.
	full := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-07", "reason": "order cancelled", "full": true,
	})
	if full.Number != "CN-2026-000003" || full.Gross != "286.80" || full.InvoiceOpen != "0.00" || full.InvoiceStatus != ledger.InvoiceCredited {
		t.Fatalf("full credit of the rest: %+v", full)
	}
	runErr(t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": inv.Number, "issue_date": "2026-12-07", "reason": "again", "full": true,
	}, ledger.CodeConflict)
	// Revenue, VAT and receivables are back to zero.
	for _, acc := range []string{"1200", "4000", "2300"} {
		if b := accountBalance(t, db, "acme", acc); b != "0.00" {
			t.Fatalf("account %s at %s after crediting everything", acc, b)
		}
	}
	requireListingAgrees(t, db, "acme")
	requireBooksBalance(t, db)
}

func TestPaymentsMoveInvoiceStatus(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	a := createInvoice(t, db, "acme", "o-a") // 363.00
	b := createInvoice(t, db, "acme", "o-b") // 363.00

	partial := run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-10", "currency": "EUR", "amount": "100.00",
		"allocations": []any{map[string]any{"invoice_number": a.Number, "amount": "100.00"}},
	})
	if st := partial.Applied[0]; st.InvoiceStatus != ledger.InvoicePartiallyPaid || st.InvoiceOpen != "263.00" {
		t.Fatalf("after a partial payment: %+v", partial)
	}
	rest := run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "bank-2", "customer_id": "cust-42", "received_on": "2026-12-11", "currency": "EUR", "amount": "700.00",
		"allocations": []any{
			map[string]any{"invoice_id": a.InvoiceID, "amount": "263.00"},
			map[string]any{"invoice_number": b.Number, "amount": "363.00"},
		},
	})
	if rest.Unapplied != "74.00" || rest.Applied[0].InvoiceStatus != ledger.InvoicePaid || rest.Applied[1].InvoiceStatus != ledger.InvoicePaid {
		t.Fatalf("paying the rest with an overpayment: %+v", rest)
	}
	if got := accountBalance(t, db, "acme", "1200"); got != "0.00" {
		t.Fatalf("receivables at %s", got)
	}
	if got := accountBalance(t, db, "acme", "2200"); got != "-74.00" {
		t.Fatalf("customer credits at %s, want -74.00 (a credit balance)", got)
	}
	if got := accountBalance(t, db, "acme", "1100"); got != "800.00" {
		t.Fatalf("bank at %s", got)
	}

	c := createInvoice(t, db, "acme", "o-c")
	for _, tc := range []struct {
		body map[string]any
		code ledger.Code
	}{
		{map[string]any{"payment_ref": "bank-3", "customer_id": "cust-42", "received_on": "2026-12-12", "currency": "EUR", "amount": "400.00",
			"allocations": []any{map[string]any{"invoice_number": c.Number, "amount": "363.01"}}}, ledger.CodeConflict},
		{map[string]any{"payment_ref": "bank-3", "customer_id": "someone-else", "received_on": "2026-12-12", "currency": "EUR", "amount": "1.00",
			"allocations": []any{map[string]any{"invoice_number": c.Number, "amount": "1.00"}}}, ledger.CodeConflict},
		{map[string]any{"payment_ref": "bank-3", "customer_id": "cust-42", "received_on": "2026-12-12", "currency": "USD", "amount": "1.00", "exchange_rate": "1.05",
			"allocations": []any{map[string]any{"invoice_number": c.Number, "amount": "1.00"}}}, ledger.CodeConflict},
		{map[string]any{"payment_ref": "bank-3", "customer_id": "cust-42", "received_on": "2026-12-12", "currency": "EUR", "amount": "1.00",
			"allocations": []any{map[string]any{"invoice_number": "INV-2026-000099", "amount": "1.00"}}}, ledger.CodeNotFound},
		{map[string]any{"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-12", "currency": "EUR", "amount": "1.00"}, ledger.CodeDuplicateDocument},
		{map[string]any{"payment_ref": "bank-3", "customer_id": "cust-42", "received_on": "2026-12-12", "currency": "EUR", "amount": "1.00",
			"allocations": []any{map[string]any{"invoice_number": a.Number, "amount": "1.00"}}}, ledger.CodeConflict},
	} {
		runErr(t, db, "acme", "payment.record", tc.body, tc.code)
	}
	requireListingAgrees(t, db, "acme")
	requireBooksBalance(t, db)
}

// Two payments for one invoice at once never take more than is open: the
// invoice row lock serialises them.
func TestConcurrentPaymentsCannotOverpay(t *testing.T) {
	t.Parallel()
	db := newDB(t, 10)
	createCompany(t, db, "acme")
	inv := createInvoice(t, db, "acme", "o-1") // 363.00
	var wg sync.WaitGroup
	results := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = execute(t, db, "acme", decode(t, "payment.record", map[string]any{
				"payment_ref": fmt.Sprintf("p-%d", i), "customer_id": "cust-42", "received_on": "2026-12-12", "currency": "EUR",
				"amount": "100.00", "allocations": []any{map[string]any{"invoice_id": inv.InvoiceID, "amount": "100.00"}},
			}))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		} else {
			requireError(t, err, ledger.CodeConflict)
		}
	}
	if ok != 3 {
		t.Fatalf("%d payments of 100.00 accepted on a 363.00 invoice, want 3", ok)
	}
}

func TestSettlementsAreUniquePerPayout(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	inv := createInvoice(t, db, "acme", "o-1")
	run[ledger.PaymentView](t, db, "acme", "payment.record", map[string]any{
		"payment_ref": "ch_1", "customer_id": "cust-42", "received_on": "2026-12-10", "method": "provider", "currency": "EUR", "amount": "363.00",
		"allocations": []any{map[string]any{"invoice_id": inv.InvoiceID, "amount": "363.00"}},
	})
	payout := map[string]any{"provider": "stripe", "payout_id": "po_1", "payout_date": "2026-12-14", "currency": "EUR",
		"gross": "363.00", "fees": "5.37", "refunds": "0.00", "net": "357.63"}
	st := run[ledger.SettlementView](t, db, "acme", "settlement.record", payout)
	if st.Net != "357.63" {
		t.Fatalf("settlement: %+v", st)
	}
	e := runErr(t, db, "acme", "settlement.record", payout, ledger.CodeDuplicateDocument)
	if e.Details["settlement_id"] != st.SettlementID {
		t.Fatalf("duplicate does not name the settlement: %+v", e)
	}
	for acc, want := range map[string]string{"1250": "0.00", "1100": "357.63", "6100": "5.37", "1200": "0.00"} {
		if got := accountBalance(t, db, "acme", acc); got != want {
			t.Errorf("account %s at %s, want %s", acc, got, want)
		}
	}
	bad := map[string]any{"provider": "stripe", "payout_id": "po_2", "payout_date": "2026-12-14", "currency": "EUR",
		"gross": "10.00", "fees": "1.00", "refunds": "0.00", "net": "9.50"}
	if _, err := ledger.Decode("settlement.record", mustJSON(t, bad)); ledger.ErrorCode(err) != ledger.CodeInvalidCommand {
		t.Fatalf("net ≠ gross - fees - refunds accepted: %v", err)
	}
	requireBooksBalance(t, db)
}

func TestPurchaseInvoices(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	body := map[string]any{
		"supplier":        map[string]any{"id": "sup-1", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT"},
		"document_number": "TK-0042", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
		"lines": []any{
			map[string]any{"description": "Office rent", "quantity": "1", "unit_price": "500.00", "vat_rate": "21"},
			map[string]any{"description": "Laptop", "quantity": "1", "unit_price": "1200.00", "vat_rate": "21", "account": "1500"},
		},
	}
	pi := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", body)
	if pi.Net != "1700.00" || pi.VAT != "357.00" || pi.Gross != "2057.00" {
		t.Fatalf("purchase invoice: %+v", pi)
	}
	for acc, want := range map[string]string{"6000": "500.00", "1500": "1200.00", "1300": "357.00", "2100": "-2057.00"} {
		if got := accountBalance(t, db, "acme", acc); got != want {
			t.Errorf("account %s at %s, want %s", acc, got, want)
		}
	}
	// The same supplier document again, under any key: duplicate.
	e := runErr(t, db, "acme", "purchase_invoice.record", body, ledger.CodeDuplicateDocument)
	if e.Details["purchase_invoice_id"] != pi.PurchaseInvoiceID {
		t.Fatalf("duplicate does not name the recorded invoice: %+v", e.Details)
	}
	// Another supplier may use the same document number.
	body["supplier"] = map[string]any{"id": "sup-2", "name": "Kitas UAB", "country": "LV"}
	run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", body)
	requireBooksBalance(t, db)
}

func TestDepreciation(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	asset := run[ledger.AssetView](t, db, "acme", "asset.register", map[string]any{
		"asset_id": "laptop-7", "description": "Laptop", "acquisition_date": "2026-12-03", "currency": "EUR",
		"cost": "1000.00", "residual_value": "0.00", "useful_life_months": 3,
	})
	// Depreciated from the month after it was put into use.
	if asset.InUseDate != "2026-12-03" || asset.FirstPeriod != "2027-01" || asset.LastPeriod != "2027-03" || asset.MonthlyAmount != "333.33" {
		t.Fatalf("asset: %+v", asset)
	}
	runErr(t, db, "acme", "asset.register", map[string]any{
		"asset_id": "laptop-7", "description": "again", "acquisition_date": "2026-12-03", "currency": "EUR",
		"cost": "5.00", "residual_value": "0", "useful_life_months": 3,
	}, ledger.CodeDuplicateDocument)

	var amounts []string
	for _, p := range []string{"2027-03", "2027-01", "2027-02"} { // any order adds up
		r := run[ledger.DepreciationView](t, db, "acme", "depreciation.run", map[string]any{"asset_id": "laptop-7", "period": p})
		amounts = append(amounts, r.Amount)
	}
	if strings.Join(amounts, " ") != "333.33 333.33 333.34" { // Mar, Jan, Feb: round(1000·k/3) steps
		t.Fatalf("monthly amounts %v", amounts)
	}
	if got := accountBalance(t, db, "acme", "1590"); got != "-1000.00" {
		t.Fatalf("accumulated depreciation %s, want the whole cost", got)
	}
	e := runErr(t, db, "acme", "depreciation.run", map[string]any{"asset_id": "laptop-7", "period": "2027-01"}, ledger.CodeDuplicateDocument)
	if e.Details["existing"] != "2027-01" {
		t.Fatalf("duplicate run: %+v", e)
	}
	runErr(t, db, "acme", "depreciation.run", map[string]any{"asset_id": "laptop-7", "period": "2026-12"}, ledger.CodeConflict)
	runErr(t, db, "acme", "depreciation.run", map[string]any{"asset_id": "nope", "period": "2026-12"}, ledger.CodeNotFound)
	requireBooksBalance(t, db)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A laptop bought on 15 November for 1 200.00 and put into use on 20
// November, over 24 months: 1 200.00 / 24 = 50.00 a month, from December
// (the month after it was put into use) to November 2028; a company whose
// policy starts with the month of use depreciates November too, to
// October 2028. Put into use before it was acquired: refused.
func TestDepreciationStartsTheMonthAfterUse(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	laptop := func(ref string, extra map[string]any) map[string]any {
		b := map[string]any{"asset_id": ref, "description": "Laptop", "acquisition_date": "2026-11-15", "in_use_date": "2026-11-20",
			"currency": "EUR", "cost": "1200.00", "residual_value": "0.00", "useful_life_months": 24}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	next := run[ledger.AssetView](t, db, "acme", "asset.register", laptop("l-1", nil))
	if next.InUseDate != "2026-11-20" || next.FirstPeriod != "2026-12" || next.LastPeriod != "2028-11" || next.MonthlyAmount != "50.00" {
		t.Fatalf("asset %+v, want 50.00 a month from 2026-12 to 2028-11", next)
	}
	e := runErr(t, db, "acme", "depreciation.run", map[string]any{"asset_id": "l-1", "period": "2026-11"}, ledger.CodeConflict)
	if !strings.Contains(e.Message, "2026-12 to 2028-11") {
		t.Fatalf("November refused with %q, want the schedule named", e.Message)
	}
	if r := run[ledger.DepreciationView](t, db, "acme", "depreciation.run", map[string]any{"asset_id": "l-1", "period": "2026-12"}); r.Amount != "50.00" {
		t.Fatalf("December's depreciation %s, want 50.00", r.Amount)
	}

	same := run[ledger.AssetView](t, db, "acme", "asset.register", laptop("l-2", map[string]any{"depreciation_start": "same_month"}))
	if same.FirstPeriod != "2026-11" || same.LastPeriod != "2028-10" {
		t.Fatalf("asset %+v, want 2026-11 to 2028-10", same)
	}
	if r := run[ledger.DepreciationView](t, db, "acme", "depreciation.run", map[string]any{"asset_id": "l-2", "period": "2026-11"}); r.Amount != "50.00" {
		t.Fatalf("November's depreciation %s, want 50.00", r.Amount)
	}

	for field, body := range map[string]map[string]any{
		"in_use_date":        laptop("l-3", map[string]any{"in_use_date": "2026-11-14"}),
		"depreciation_start": laptop("l-3", map[string]any{"depreciation_start": "next_year"}),
	} {
		if _, err := ledger.Decode("asset.register", mustJSON(t, body)); ledger.ErrorCode(err) != ledger.CodeInvalidCommand || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want invalid_command naming it", field, err)
		}
	}
	requireBooksBalance(t, db)
}

// Two laptops bought on one purchase line of 1 200.00 net and a service on
// another of 100.00: an asset names the line it was bought on; the assets
// on a line cost no more than its net, one by one and in one batch; a line
// that is not there, or is another company's, is not found.
func TestAnAssetNamesThePurchaseLineItWasBoughtOn(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	createCompany(t, db, "beta")
	purchase := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", map[string]any{
		"supplier":        map[string]any{"id": "s1", "name": "UAB Kompiuteriai", "vat_id": "LT200000000020", "country": "LT"},
		"document_number": "KP-77", "issue_date": "2026-11-15", "due_date": "2026-12-15", "currency": "EUR",
		"lines": []any{
			map[string]any{"description": "Laptop", "quantity": "2", "unit_price": "600.00", "vat_rate": "21"},
			map[string]any{"description": "Setup", "quantity": "1", "unit_price": "100.00", "vat_rate": "21"},
		}})
	laptop := func(ref, cost string, line int) map[string]any {
		return map[string]any{"asset_id": ref, "description": "Laptop", "acquisition_date": "2026-11-15", "currency": "EUR",
			"cost": cost, "useful_life_months": 24, "purchase": map[string]any{"purchase_invoice_id": purchase.PurchaseInvoiceID, "line_no": line}}
	}
	first := run[ledger.AssetView](t, db, "acme", "asset.register", laptop("l-1", "600.00", 1))
	if first.Purchase == nil || first.Purchase.PurchaseInvoiceID != purchase.PurchaseInvoiceID || first.Purchase.LineNo != 1 {
		t.Fatalf("asset names purchase %+v, want line 1 of %s", first.Purchase, purchase.PurchaseInvoiceID)
	}
	run[ledger.AssetView](t, db, "acme", "asset.register", laptop("l-2", "600.00", 1))
	var stored string
	if err := db.QueryRow(testContext(t), `SELECT purchase_invoice_id::text || '/' || purchase_line_no FROM assets WHERE company_id = 'acme' AND asset_ref = 'l-2'`).Scan(&stored); err != nil || stored != purchase.PurchaseInvoiceID+"/1" {
		t.Fatalf("stored link %q (%v), want %s/1", stored, err, purchase.PurchaseInvoiceID)
	}

	e := runErr(t, db, "acme", "asset.register", laptop("l-3", "0.01", 1), ledger.CodeConflict)
	if e.Details["line_net"] != "1200.00" || e.Details["assets_cost"] != "1200.00" || !strings.Contains(e.Message, "1200.01") {
		t.Fatalf("a third laptop on the line: %s %v, want the line's net and the assets' cost named", e.Message, e.Details)
	}
	runErr(t, db, "acme", "asset.register", laptop("l-4", "100.00", 3), ledger.CodeNotFound)
	runErr(t, db, "beta", "asset.register", laptop("l-4", "100.00", 1), ledger.CodeNotFound)
	if _, err := ledger.Decode("asset.register", mustJSON(t, map[string]any{"asset_id": "l-5", "description": "Laptop", "acquisition_date": "2026-11-15",
		"currency": "EUR", "cost": "1.00", "useful_life_months": 24, "purchase": map[string]any{"purchase_invoice_id": "KP-77", "line_no": 1}})); ledger.ErrorCode(err) != ledger.CodeInvalidCommand || !strings.Contains(err.Error(), "purchase.purchase_invoice_id") {
		t.Fatalf("a purchase named by its number: %v, want invalid_command naming purchase.purchase_invoice_id", err)
	}

	// In one batch, the second setup of 60.00 would take line 2 past its 100.00.
	results := executePlan(t, db, []exec.Item{
		{Company: "acme", Key: "a1", Command: decode(t, "asset.register", laptop("setup-1", "60.00", 2))},
		{Company: "acme", Key: "a2", Command: decode(t, "asset.register", laptop("setup-2", "60.00", 2))},
	})
	if results[0].Err != nil || results[1].Err == nil || results[1].Err.Code != ledger.CodeConflict {
		t.Fatalf("in one batch: %v then %v, want the second refused as a conflict", results[0].Err, results[1].Err)
	}
}
