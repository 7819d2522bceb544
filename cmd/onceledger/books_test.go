package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/harness/isafcheck"
	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/harness/testkeys"
	"github.com/onceledger/onceledger/internal/kinds"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// booksDatabase returns a migrated database holding acme's December 2026:
// an invoice of 419.00 (300.00 at 21%, 50.00 at 12%), a credit note of one
// consulting hour (121.00), a bank payment of 100.00 and a supplier's
// invoice of 500.00 + 105.00 VAT.
func booksDatabase(t *testing.T) string {
	t.Helper()
	dsn := testenv.Migrated(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	runCommands(t, dsn, []struct{ name, body string }{
		{"company.create", `{"name": "Acme UAB", "country": "LT", "currency": "EUR", "vat_id": "LT100000000010", "registration_number": "100000001"}`},
		{"invoice.create", `{"order_id": "o-1", "customer": {"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
			"currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
			"lines": [{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"},
			          {"description": "Accommodation", "quantity": "1", "unit_price": "50.00", "vat_rate": "12"}]}`},
		{"credit_note.create", `{"invoice_number": "INV-2026-000001", "issue_date": "2026-12-10", "reason": "one hour not delivered",
			"lines": [{"line": 1, "quantity": "1"}]}`},
		{"payment.record", `{"payment_ref": "bank-1", "customer_id": "cust-42", "received_on": "2026-12-15", "currency": "EUR", "amount": "100.00",
			"allocations": [{"invoice_number": "INV-2026-000001", "amount": "100.00"}]}`},
		{"period.close", `{"period": "2026-11", "closed_by": "accountant"}`},
		{"purchase_invoice.record", `{"supplier": {"id": "sup-1", "name": "Tiekėjas UAB", "vat_id": "LT100000000020", "country": "LT"},
			"document_number": "TK-0042", "issue_date": "2026-12-03", "due_date": "2026-12-31", "currency": "EUR",
			"lines": [{"description": "Office rent", "quantity": "1", "unit_price": "500.00", "vat_rate": "21"}]}`},
	})
	return dsn
}

// runCommands executes each command for company acme in a transaction of
// its own, as the worker's kinds do.
func runCommands(t *testing.T, dsn string, cmds []struct{ name, body string }) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	k, err := kinds.All(testkeys.Rules(), testkeys.Clock())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		cmd, err := ledger.Decode(c.name, []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			_, err := exec.Run(ctx, tx, k, "acme", cmd)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

func TestBooks(t *testing.T) {
	t.Parallel()
	dsn := booksDatabase(t)
	ctx := context.Background()
	books := func(args ...string) (int, string, string) {
		return invoke(ctx, "", append([]string{"books"}, append(args, "-database-url", dsn)...)...)
	}
	requireOut := func(t *testing.T, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}

	t.Run("periods", func(t *testing.T) {
		code, out, errOut := books("periods", "-company", "acme")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		requireOut(t, out, "Periods of acme: closed through 2026-11", "2026-12", "open", "2026-11", "closed", "accountant")
		code, out, _ = books("periods", "-company", "acme", "-format", "json")
		var v ledger.PeriodsView
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || len(v.Periods) != 2 ||
			v.Periods[0].Period != "2026-12" || v.Periods[0].Status != "open" || v.Periods[0].Entries != 4 ||
			v.Periods[1].Status != "closed" || v.Periods[1].ClosedBy == nil || v.Periods[1].ClosedBy.ClosedBy != "accountant" {
			t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
		}
		if code, _, errOut := books("periods", "-company", "ghost"); code != 2 || !strings.Contains(errOut, "does not exist") {
			t.Fatalf("an unknown company: exit %d %s", code, errOut)
		}
	})

	t.Run("trial balance", func(t *testing.T) {
		code, out, errOut := books("trial-balance", "-company", "acme", "-date", "2026-12-31")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// Receivables 419.00 − 121.00 − 100.00; all debits 1245.00 = all credits.
		requireOut(t, out, "Trial balance of acme as of 2026-12-31, in the company's currency", "Accounts receivable", "198.00", "Total", "1245.00", "-605.00")
		code, out, _ = books("trial-balance", "-company", "acme", "-date", "2026-12-31", "-currency", "document")
		if code != 0 || !strings.Contains(out, "per document currency") || !strings.Contains(out, "1245.00") {
			t.Fatalf("per document currency: exit %d:\n%s", code, out)
		}

		code, out, _ = books("trial-balance", "-company", "acme", "-date", "2026-12-31", "-format", "json")
		var v ledger.TrialBalanceView
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
			t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
		}
		if !v.Balanced || len(v.Totals) != 1 || v.Totals[0].Debits != "1245.00" || v.Totals[0].Credits != "1245.00" {
			t.Fatalf("json totals: %+v", v.Totals)
		}
		// Today's by default.
		today := time.Now().Format("2006-01-02")
		if code, out, _ = books("trial-balance", "-company", "acme"); code != 0 || !strings.Contains(out, "as of "+today) {
			t.Fatalf("default date: exit %d:\n%s", code, out)
		}
	})

	t.Run("account", func(t *testing.T) {
		code, out, errOut := books("account", "-company", "acme", "-account", "1200", "-from", "2026-12-05", "-to", "2026-12-31")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		requireOut(t, out, "Account 1200 Accounts receivable (asset) of acme, 2026-12-05 to 2026-12-31",
			"Opening balance", "419.00", "Credit note CN-2026-000001 for invoice INV-2026-000001", "298.00", "Payment bank-1", "198.00", "Closing balance")

		code, out, _ = books("account", "-company", "acme", "-account", "1200", "-format", "json")
		var v ledger.AccountLedgerView
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
			t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
		}
		if c := v.Currencies[0]; len(c.Entries) != 3 || c.Entries[0].Balance != "419.00" || c.Entries[2].Balance != "198.00" || c.Closing != "198.00" {
			t.Fatalf("json: %+v", v)
		}
	})

	t.Run("invoice", func(t *testing.T) {
		code, out, errOut := books("invoice", "-company", "acme", "-invoice", "INV-2026-000001")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		requireOut(t, out, "Invoice INV-2026-000001", "UAB Pavyzdys (cust-42, LT100000000010, LT)", "Status    partially_paid",
			"Consulting", "CN-2026-000001", "one hour not delivered", "bank-1", "Credited  121.00", "Paid      100.00", "Open EUR  198.00")

		code, out, _ = books("invoice", "-company", "acme", "-invoice", "INV-2026-000001", "-format", "json")
		var v ledger.InvoiceDetailView
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
			t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
		}
		if v.Status != ledger.InvoicePartiallyPaid || v.Open != "198.00" || v.Invoice.Gross != "419.00" {
			t.Fatalf("json: %+v", v)
		}
		// By id too.
		if code, out, _ := books("invoice", "-company", "acme", "-invoice", v.Invoice.InvoiceID); code != 0 || !strings.Contains(out, "INV-2026-000001") {
			t.Fatalf("by id: exit %d:\n%s", code, out)
		}
	})

	t.Run("VAT return", func(t *testing.T) {
		code, out, errOut := books("vat-return", "-company", "acme", "-period", "2026-12")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		requireOut(t, out, "VAT return of acme (LT100000000010) for 2026-12 (2026-12-01 to 2026-12-31)", "EUR",
			"200.00", "42.00", "6.00", "105.00", "-57.00")

		code, out, _ = books("vat-return", "-company", "acme", "-period", "2026-12", "-format", "json")
		var v ledger.VATReturnView
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
			t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
		}
		// Output: 21% 300.00 − 100.00 = 200.00 with 42.00 VAT, 12% 50.00 with 6.00; input 105.00.
		if c := v.Currencies[0]; c.OutputVAT != "48.00" || c.InputVAT != "105.00" || c.Payable != "-57.00" ||
			len(c.Output) != 2 || c.Output[0] != (ledger.RateView{Rate: "12", Net: "50.00", VAT: "6.00"}) ||
			c.Output[1] != (ledger.RateView{Rate: "21", Net: "200.00", VAT: "42.00"}) {
			t.Fatalf("json: %+v", v)
		}
	})

	t.Run("register", func(t *testing.T) {
		code, out, errOut := books("register", "-company", "acme", "-period", "2026-12")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		want := strings.Join([]string{
			strings.Join(ledger.RegisterCSVHeader, ","),
			"invoice,INV-2026-000001,2026-12-02,cust-42,LT100000000010,LT,UAB Pavyzdys,50.00,12,6.00,EUR,,standard",
			"invoice,INV-2026-000001,2026-12-02,cust-42,LT100000000010,LT,UAB Pavyzdys,300.00,21,63.00,EUR,,standard",
			"purchase_invoice,TK-0042,2026-12-03,sup-1,LT100000000020,LT,Tiekėjas UAB,500.00,21,105.00,EUR,,standard",
			"credit_note,CN-2026-000001,2026-12-10,cust-42,LT100000000010,LT,UAB Pavyzdys,-100.00,21,-21.00,EUR,INV-2026-000001,standard",
		}, "\n") + "\n"
		if out != want {
			t.Fatalf("CSV:\n%s\nwant:\n%s", out, want)
		}

		code, out, _ = books("register", "-company", "acme", "-period", "2026-12", "-format", "xml")
		var f ledger.ISAFFile
		if err := xml.Unmarshal([]byte(out), &f); code != 0 || err != nil {
			t.Fatalf("xml: exit %d, %v:\n%s", code, err, out)
		}
		if errs := isafcheck.Check([]byte(out)); len(errs) > 0 {
			t.Fatalf("the i.SAF file is not valid:\n%s", strings.Join(errs, "\n"))
		}
		sales := f.SourceDocuments.SalesInvoices.Invoices
		if len(sales) != 2 || sales[1].InvoiceType != "KS" || sales[1].References.References[0].ReferenceNo != "INV-2026-000001" ||
			f.Header.FileDescription.RegistrationNumber != "100000001" {
			t.Fatalf("xml:\n%s", out)
		}
		// A month of one part: part 1 is the whole file, there is no part 2.
		if code, one, _ := books("register", "-company", "acme", "-period", "2026-12", "-format", "xml", "-part", "1"); code != 0 || one[strings.Index(one, "<Source"):] != out[strings.Index(out, "<Source"):] {
			t.Fatalf("part 1: exit %d:\n%s", code, one)
		}
		if code, _, errOut := books("register", "-company", "acme", "-period", "2026-12", "-format", "xml", "-part", "2"); code != 1 || !strings.Contains(errOut, "part 2 does not exist") {
			t.Fatalf("part 2: exit %d: %s", code, errOut)
		}

		code, out, _ = books("register", "-company", "acme", "-period", "2026-12", "-format", "json")
		var v ledger.RegisterView
		if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || len(v.Rows) != 4 || v.Rows[3].ReferenceNumber != "INV-2026-000001" {
			t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"invoice", "-company", "acme", "-invoice", "INV-2026-000099"}, 1, `company "acme" has no invoice "INV-2026-000099"`},
			{[]string{"trial-balance", "-company", "ghost"}, 2, `company "ghost" does not exist`},
			{[]string{"account", "-company", "acme", "-account", "9999"}, 1, `company "acme" has no account "9999"`},
			{[]string{"balance-sheet", "-company", "acme"}, 2, `unknown report "balance-sheet"`},
			{[]string{"trial-balance"}, 2, "-company is required"},
			{[]string{"trial-balance", "-company", "acme", "-date", "31.12.2026"}, 2, `-date: "31.12.2026" is not a date`},
			{[]string{"trial-balance", "-company", "acme", "-format", "csv"}, 2, `-format "csv": trial-balance takes text, json`},
			{[]string{"trial-balance", "-company", "acme", "-currency", "USD"}, 2, `-currency: "USD" is neither "company" nor "document"`},
			{[]string{"account", "-company", "acme"}, 2, "-account is required"},
			{[]string{"account", "-company", "acme", "-account", "1200", "-from", "2026-12-31", "-to", "2026-12-01"}, 2, "-to is before -from"},
			{[]string{"invoice", "-company", "acme"}, 2, "-invoice is required"},
			{[]string{"vat-return", "-company", "acme", "-period", "2026-13"}, 2, `-period: "2026-13" is not a month`},
			{[]string{"register", "-company", "acme"}, 2, "-period is required"},
			{[]string{"register", "-company", "acme", "-period", "2026-12", "-format", "text"}, 2, "register takes csv, xml, json"},
			{[]string{"register", "-company", "acme", "-period", "2026-12", "-part", "1"}, 2, "-part is for -format xml"},
		} {
			code, _, errOut := books(c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, want %d with %q; stderr:\n%s", c.args, code, c.code, c.want, errOut)
			}
		}
		if code, _, errOut := invoke(ctx, "", "books"); code != 2 || !strings.Contains(errOut, "a report is required") {
			t.Errorf("no report: exit %d: %s", code, errOut)
		}
		if code, out, _ := invoke(ctx, "", "books", "-h"); code != 0 || !strings.Contains(out, "vat-return") {
			t.Errorf("books -h: exit %d:\n%s", code, out)
		}
		if code, _, errOut := invoke(ctx, "", "books", "trial-balance", "-company", "acme", "-database-url", ""); code != 2 || !strings.Contains(errOut, "DATABASE_URL") {
			t.Errorf("no database: exit %d: %s", code, errOut)
		}
	})
}

// A company that has closed no month says so, not "closed through" a
// blank.
func TestPeriodsOfACompanyThatClosedNothing(t *testing.T) {
	var b strings.Builder
	if err := writePeriods(&b, ledger.PeriodsView{Company: "acme"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "Periods of acme: no month closed yet\n") {
		t.Fatalf("periods of a company that closed nothing:\n%s", b.String())
	}
}

// A VAT invoice in another currency than the company's states the rate,
// where it is from and of what day, and the amounts and VAT in the
// company's currency, by rate.
func TestInvoiceInAnotherCurrencyShowsTheRate(t *testing.T) {
	v := ledger.InvoiceDetailView{Status: "open"}
	v.Invoice.Number, v.Invoice.Currency = "INV-2026-000007", "USD"
	v.Invoice.Net, v.Invoice.VAT, v.Invoice.Gross = "125.00", "26.25", "151.25"
	v.Invoice.Exchange = &ledger.ConversionView{Rate: "1.25", Source: "ECB", RateDate: "2026-12-02", Currency: "EUR",
		Net: "100.00", VAT: "21.00", Gross: "121.00", VATBreakdown: []ledger.RateView{{Rate: "21", Net: "100.00", VAT: "21.00"}}}
	var b strings.Builder
	if err := writeInvoice(&b, v); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Exchange  1.25 USD per 1 EUR (recorded rate, ECB, of 2026-12-02)", "IN EUR", "VAT 21 %", "100.00", "21.00", "121.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("the invoice does not say %q:\n%s", want, out)
		}
	}
	v.Invoice.Exchange.Source = "document"
	b.Reset()
	if err := writeInvoice(&b, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Exchange  1.25 USD per 1 EUR (the invoice's own rate)") {
		t.Errorf("an invoice with its own rate:\n%s", b.String())
	}
}

// books aged: acme's invoice, 419.00 less the credit note of 121.00 and
// 100.00 paid on 15 December, is 198.00 open and 15 days past due on 31
// December; the supplier's 605.00 is due that day, so not yet due.
func TestBooksAged(t *testing.T) {
	t.Parallel()
	dsn := booksDatabase(t)
	ctx := context.Background()
	books := func(args ...string) (int, string, string) {
		return invoke(ctx, "", append([]string{"books", "aged"}, append(args, "-database-url", dsn)...)...)
	}
	code, out, errOut := books("-company", "acme", "-kind", "receivables", "-date", "2026-12-31", "-detail")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Aged receivables of acme at 2026-12-31, in EUR", "CUSTOMER", "NOT DUE", "1-30", "OVER 90",
		"cust-42", "UAB Pavyzdys", "198.00", "INV-2026-000001", "2026-12-16", "days_1_30"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = books("-company", "acme", "-kind", "payables", "-date", "2026-12-31", "-format", "json")
	var v ledger.AgedView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
	}
	if len(v.Counterparties) != 1 || v.Counterparties[0].ID != "vat:LT100000000020" || v.Total.NotDue != "605.00" || v.Total.Total != "605.00" ||
		len(v.Counterparties[0].Documents) != 1 || v.Counterparties[0].Documents[0].Number != "TK-0042" {
		t.Fatalf("payables: %+v", v)
	}

	// Before the payment: 298.00 open, not yet due.
	code, out, _ = books("-company", "acme", "-kind", "receivables", "-date", "2026-12-10", "-format", "csv")
	want := strings.Join(ledger.AgedCSVHeader, ",") + "\ncust-42,UAB Pavyzdys,INV-2026-000001,2026-12-02,2026-12-16,0,not_due,EUR,298.00,EUR,298.00\n"
	if code != 0 || out != want {
		t.Fatalf("csv: exit %d:\n%s\nwant:\n%s", code, out, want)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-company", "acme"}, "-kind is required"},
		{[]string{"-company", "acme", "-kind", "debtors"}, `-kind: "debtors" is neither "receivables" nor "payables"`},
		{[]string{"-company", "acme", "-kind", "payables", "-format", "xml"}, "aged takes text, csv, json"},
		{[]string{"-company", "acme", "-kind", "payables", "-date", "31.12.2026"}, `-date: "31.12.2026" is not a date`},
		{[]string{"-company", "ghost", "-kind", "payables"}, `company "ghost" does not exist`},
	} {
		if code, _, errOut := books(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q; stderr:\n%s", c.args, code, c.want, errOut)
		}
	}
	if code, out, errOut := invoke(ctx, "", "books", "aged", "-h"); code != 0 || !strings.Contains(out+errOut, "-kind") || !strings.Contains(out+errOut, "Needs the database") {
		t.Errorf("books aged -h: exit %d:\n%s%s", code, out, errOut)
	}
}

// The credits report lists what a payment left beyond what it paid, per
// customer or supplier and currency, as of a day.
func TestBooksCredits(t *testing.T) {
	t.Parallel()
	dsn := booksDatabase(t)
	// cust-42 pays 250.00 of which 198.00 to what is open; sup-1 is paid
	// 700.00 of which 605.00 to TK-0042.
	runCommands(t, dsn, []struct{ name, body string }{
		{"payment.record", `{"payment_ref": "bank-2", "customer_id": "cust-42", "received_on": "2026-12-20", "currency": "EUR", "amount": "250.00",
			"allocations": [{"invoice_number": "INV-2026-000001", "amount": "198.00"}]}`},
		{"supplier_payment.record", `{"payment_ref": "out-1", "supplier_id": "sup-1", "paid_on": "2026-12-21", "currency": "EUR", "amount": "700.00",
			"allocations": [{"document_number": "TK-0042", "amount": "605.00"}]}`},
	})
	ctx := context.Background()
	books := func(args ...string) (int, string, string) {
		return invoke(ctx, "", append([]string{"books", "credits"}, append(args, "-database-url", dsn)...)...)
	}
	code, out, errOut := books("-company", "acme", "-kind", "customers", "-date", "2026-12-31")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Customers' credits of acme at 2026-12-31 (account 2200)", "CUSTOMER", "cust-42", "52.00", "2026-12-20", "Total"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = books("-company", "acme", "-kind", "suppliers", "-date", "2026-12-31", "-format", "json")
	var v ledger.CreditsView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
	}
	if v.Account != "1400" || len(v.Credits) != 1 || v.Credits[0].PartyID != "sup-1" || v.Credits[0].Balance != "95.00" || v.TotalCompany != "95.00" {
		t.Fatalf("suppliers' credits: %+v", v)
	}
	// Before the payments there is none.
	code, out, _ = books("-company", "acme", "-kind", "suppliers", "-date", "2026-12-20", "-format", "json")
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || len(v.Credits) != 0 || v.TotalCompany != "0.00" {
		t.Fatalf("on 2026-12-20: exit %d, %v: %+v", code, err, v)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-company", "acme"}, "-kind is required: customers or suppliers"},
		{[]string{"-company", "acme", "-kind", "payables"}, `-kind: "payables" is neither "customers" nor "suppliers"`},
	} {
		if code, _, errOut := books(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want 2 with %q; stderr:\n%s", c.args, code, c.want, errOut)
		}
	}
}
