package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

// A month as an accountant would post it: domestic sales at two rates, an
// intra-EU supply of goods (and a credit note of part of it), an export,
// an invoice in US dollars, goods and services bought from other member
// states and a domestic purchase under reverse charge, and an ordinary
// purchase. The VAT return, the i.SAF file and the journal agree with
// each other in euros, and the file follows the specification.
func TestVATTreatmentsMonth(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createRegisteredCompany(t, db, "acme")
	sale := func(order string, customer map[string]any, currency string, lines ...map[string]any) ledger.InvoiceView {
		b := map[string]any{"order_id": order, "customer": customer, "currency": currency,
			"issue_date": "2026-12-02", "due_date": "2026-12-30", "lines": lines}
		if currency == "USD" {
			b["exchange_rate"] = "1.25"
		}
		return run[ledger.InvoiceView](t, db, "acme", "invoice.create", b)
	}
	line := func(net, rate, treatment string) map[string]any {
		l := map[string]any{"description": "item", "quantity": "1", "unit_price": net, "vat_rate": rate}
		if treatment != "" {
			l["vat_treatment"] = treatment
		}
		return l
	}
	lt := map[string]any{"id": "c-lt", "name": "UAB Pirkėjas", "vat_id": "LT100000000020", "country": "LT"}
	de := map[string]any{"id": "c-de", "name": "Käufer GmbH", "vat_id": "DE123456789", "country": "DE"}
	us := map[string]any{"id": "c-us", "name": "Buyer Inc", "country": "US"}

	domestic := sale("o-lt", lt, "EUR", line("1000.00", "21", ""), line("100.00", "12", ""))
	intra := sale("o-de", de, "EUR", line("500.00", "0", "intra_eu_goods"))
	// A service to the same EU business: taxed where it is, not here
	// (Art. 13(2)); PVM15 and field 20, its value worked by hand: 800.00.
	services := sale("o-de-svc", de, "EUR", line("800.00", "0", "intra_eu_services"))
	export := sale("o-us", us, "EUR", line("300.00", "0", ""))
	usd := sale("o-usd", lt, "USD", line("125.00", "21", ""))
	for _, c := range []struct {
		inv  ledger.InvoiceView
		want []ledger.VATTreatment
	}{
		{domestic, []ledger.VATTreatment{ledger.TreatmentStandard, ledger.TreatmentStandard}},
		{intra, []ledger.VATTreatment{ledger.TreatmentIntraEUGoods}},
		{services, []ledger.VATTreatment{ledger.TreatmentIntraEUServices}},
		{export, []ledger.VATTreatment{ledger.TreatmentExport}},
		{usd, []ledger.VATTreatment{ledger.TreatmentStandard}},
	} {
		for i, l := range c.inv.Lines {
			if l.VATTreatment != c.want[i] {
				t.Fatalf("%s line %d: treatment %q, want %q", c.inv.Number, i+1, l.VATTreatment, c.want[i])
			}
		}
	}
	if x := usd.Exchange; x == nil || x.Net != "100.00" || x.VAT != "21.00" {
		t.Fatalf("USD invoice exchange %+v", usd.Exchange)
	}
	// A 0 % sale at home says nothing of why: refused, naming the choices.
	e := runErr(t, db, "acme", "invoice.create", map[string]any{"order_id": "o-0", "customer": lt, "currency": "EUR",
		"issue_date": "2026-12-02", "due_date": "2026-12-30", "lines": []any{line("10.00", "0", "")}}, ledger.CodeInvalidCommand)
	if !strings.Contains(e.Message, "lines[0].vat_treatment") || !strings.Contains(e.Message, "exempt, export, intra_eu_goods, intra_eu_services, other_zero") {
		t.Fatalf("refusal %q", e.Message)
	}
	// Nor does a 0 % line to an EU business say whether it is goods or
	// services: refused, naming both.
	e = runErr(t, db, "acme", "invoice.create", map[string]any{"order_id": "o-0-de", "customer": de, "currency": "EUR",
		"issue_date": "2026-12-02", "due_date": "2026-12-30", "lines": []any{line("10.00", "0", "")}}, ledger.CodeInvalidCommand)
	if !strings.Contains(e.Message, "intra_eu_goods for goods (PVM13, FR0600 field 18), intra_eu_services for services") {
		t.Fatalf("refusal of a 0 %% line to an EU business without its treatment: %q", e.Message)
	}
	// The credit note of part of the intra-EU supply takes its treatment.
	cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{
		"invoice_number": intra.Number, "issue_date": "2026-12-05", "reason": "damaged",
		"amounts": []any{map[string]any{"vat_rate": "0", "net": "100.00"}}})
	if cn.Lines[0].VATTreatment != ledger.TreatmentIntraEUGoods {
		t.Fatalf("credit note line %+v", cn.Lines[0])
	}

	purchase := func(doc string, supplier map[string]any, lines ...map[string]any) ledger.PurchaseInvoiceView {
		return run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", map[string]any{
			"supplier": supplier, "document_number": doc, "issue_date": "2026-12-10", "due_date": "2027-01-10",
			"currency": "EUR", "lines": lines})
	}
	goods := purchase("DE-1", map[string]any{"id": "s-de", "name": "Lieferant GmbH", "vat_id": "DE987654321", "country": "DE"},
		line("2000.00", "21", "reverse_charge_eu_goods"))
	if goods.Payable != "2000.00" || goods.SelfAssessedVAT != "420.00" {
		t.Fatalf("EU goods: payable %s, self-assessed %s", goods.Payable, goods.SelfAssessedVAT)
	}
	purchase("FR-1", map[string]any{"id": "s-fr", "name": "Conseil SARL", "vat_id": "FR12345678901", "country": "FR"},
		line("300.00", "21", "reverse_charge_eu_services"))
	purchase("LT-RC", map[string]any{"id": "s-lt", "name": "Statyba UAB", "vat_id": "LT100000000030", "country": "LT"},
		line("1000.00", "21", "reverse_charge_domestic"))
	purchase("LT-1", map[string]any{"id": "s-lt2", "name": "Biuras UAB", "vat_id": "LT100000000040", "country": "LT"},
		line("100.00", "21", ""))
	runErr(t, db, "acme", "purchase_invoice.record", map[string]any{
		"supplier": map[string]any{"id": "s-lt", "name": "Statyba UAB", "country": "LT"}, "document_number": "LT-X",
		"issue_date": "2026-12-10", "due_date": "2027-01-10", "currency": "EUR", "lines": []any{line("5.00", "21", "reverse_charge_eu_goods")}},
		ledger.CodeInvalidCommand)

	// The return, field by field, in euros.
	p := ledger.Period{Year: 2026, Month: 12}
	vr := vatReturnOf(t, db, p)
	if len(vr.Currencies) != 1 || vr.Currencies[0].Currency != "EUR" {
		t.Fatalf("return currencies %+v", vr.Currencies)
	}
	c := vr.Currencies[0]
	fields := map[int]string{}
	var got []string
	for _, f := range c.Fields {
		fields[f.Field] = f.Amount
		got = append(got, fmt.Sprintf("%d=%s", f.Field, f.Amount))
	}
	want := "11=1200.00 17=300.00 18=400.00 20=800.00 21=2000.00 23=300.00 24=300.00 25=714.00 " +
		"29=231.00 30=12.00 32=63.00 33=210.00 34=420.00 35=714.00 36=222.00"
	if strings.Join(got, " ") != want {
		t.Fatalf("FR0600\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if c.OutputVAT != "243.00" || c.SelfAssessedVAT != "693.00" || c.InputVAT != "714.00" || c.Payable != "222.00" || fields[36] != c.Payable {
		t.Fatalf("return: output %s, self-assessed %s, input %s, payable %s", c.OutputVAT, c.SelfAssessedVAT, c.InputVAT, c.Payable)
	}

	// The journal agrees: output VAT is what sales and reverse charges
	// owe, input VAT what is deducted, revenue the supplies' values.
	for account, want := range map[string]string{
		ledger.AccountOutputVAT: neg(t, c.OutputVAT, c.SelfAssessedVAT),
		ledger.AccountInputVAT:  c.InputVAT,
		ledger.AccountRevenue:   neg(t, fields[11], fields[17], fields[18], fields[20]),
		ledger.AccountPayables:  "-3421.00",
	} {
		if got := companyBalance(t, db, "acme", account); got != want {
			t.Errorf("%s: %s in the journal, want %s", account, got, want)
		}
	}
	requireBalancedInCompanyCurrency(t, db)

	// The i.SAF file: every total's code and amounts add up to the
	// return's fields, and the file follows the specification.
	f := isafFile(t, db, "acme", p)
	type sums struct{ net, vat decimal.Decimal }
	sales, purchases := map[string]sums{}, map[string]sums{}
	add := func(m map[string]sums, invs *ledger.ISAFInvoices) {
		if invs == nil {
			t.Fatal("the file has no documents of a kind the month has")
		}
		for _, inv := range invs.Invoices {
			for _, tot := range inv.DocumentTotals.Totals {
				s := m[tot.TaxCode.Value]
				s.net, s.vat = s.net.Add(dec(tot.TaxableValue)), s.vat.Add(dec(tot.Amount.Value))
				m[tot.TaxCode.Value] = s
			}
		}
	}
	add(sales, f.SourceDocuments.SalesInvoices)
	add(purchases, f.SourceDocuments.PurchaseInvoices)
	if len(sales) != 5 || len(purchases) != 4 {
		t.Fatalf("codes: sales %v, purchases %v", sales, purchases)
	}
	for _, c := range []struct {
		m          map[string]sums
		code       string
		net, vat   string
		fieldNames string
	}{
		{sales, "PVM1", "1100.00", fields[29], "11, 29"},
		{sales, "PVM2", "100.00", fields[30], "11, 30"},
		{sales, "PVM12", fields[17], "0.00", "17"},
		{sales, "PVM13", fields[18], "0.00", "18"},
		{sales, "PVM15", fields[20], "0.00", "20"},
		{purchases, "PVM16", fields[21], fields[34], "21, 34"},
		{purchases, "PVM21", fields[23], fields[32], "23, 32"},
		{purchases, "PVM21", fields[24], fields[32], "24, 32"},
		{purchases, "PVM25", "1000.00", fields[33], "33; the value has no field"},
		{purchases, "PVM1", "100.00", "21.00", "25 and 35 only"},
	} {
		s := c.m[c.code]
		if s.net.StringFixed(2) != c.net || s.vat.StringFixed(2) != c.vat {
			t.Errorf("%s: %s and %s in the file, want %s and %s (fields %s)", c.code, s.net.StringFixed(2), s.vat.StringFixed(2), c.net, c.vat, c.fieldNames)
		}
	}
	var salesVAT, purchaseVAT decimal.Decimal
	for _, s := range sales {
		salesVAT = salesVAT.Add(s.vat)
	}
	for _, s := range purchases {
		purchaseVAT = purchaseVAT.Add(s.vat)
	}
	if fields[31] != "" {
		t.Errorf("field 31 %s: the month has no supply at 5 %%", fields[31])
	}
	// Field 11 is the value of the supplies at every rate, their VAT is
	// split by rate.
	if v := sales["PVM1"].net.Add(sales["PVM2"].net).StringFixed(2); v != fields[11] {
		t.Errorf("the file's PVM1 and PVM2 values %s, field 11 %s", v, fields[11])
	}
	if v := dec(fields[29]).Add(dec(fields[30])); !salesVAT.Equal(v) || purchaseVAT.StringFixed(2) != fields[25] ||
		purchaseVAT.StringFixed(2) != fields[35] {
		t.Errorf("the file's VAT: sales %s (fields 29 + 30 %s), purchases %s (field 25 %s, field 35 %s)",
			salesVAT, v, purchaseVAT, fields[25], fields[35])
	}
}

// neg is minus the sum of amounts, as a credit balance reads.
func neg(t *testing.T, amounts ...string) string {
	t.Helper()
	var s decimal.Decimal
	for _, a := range amounts {
		s = s.Add(dec(a))
	}
	return s.Neg().StringFixed(2)
}

// A credit note's line takes the treatment of the invoice line it
// credits; a credit by rate is refused where the invoice's lines at that
// rate have more than one treatment, as it could not say which supply it
// reduces.
func TestCreditNoteTreatments(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createCompany(t, db, "acme")
	b := invoiceBody("o-mixed")
	b["lines"] = []any{
		map[string]any{"description": "Insurance", "quantity": "1", "unit_price": "40.00", "vat_rate": "0", "vat_treatment": "exempt"},
		map[string]any{"description": "Freight abroad", "quantity": "2", "unit_price": "30.00", "vat_rate": "0", "vat_treatment": "other_zero"},
	}
	inv := run[ledger.InvoiceView](t, db, "acme", "invoice.create", b)
	e := runErr(t, db, "acme", "credit_note.create", map[string]any{"invoice_number": inv.Number, "issue_date": "2026-12-05", "reason": "r",
		"amounts": []any{map[string]any{"vat_rate": "0", "net": "10.00"}}}, ledger.CodeConflict)
	if !strings.Contains(e.Message, "more than one VAT treatment (exempt, other_zero): credit them by line") {
		t.Fatalf("refusal %q", e.Message)
	}
	cn := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{"invoice_number": inv.Number, "issue_date": "2026-12-05",
		"reason": "r", "lines": []any{map[string]any{"line": 2, "quantity": "1"}}})
	if len(cn.Lines) != 1 || cn.Lines[0].VATTreatment != ledger.TreatmentOtherZero {
		t.Fatalf("credit note lines %+v", cn.Lines)
	}
	fields := func() string {
		vr := vatReturnOf(t, db, ledger.Period{Year: 2026, Month: 12})
		var got []string
		for _, f := range vr.Currencies[0].Fields {
			got = append(got, fmt.Sprintf("%d=%s", f.Field, f.Amount))
		}
		return strings.Join(got, " ")
	}
	// The register keeps them apart: the invoice's two 0 % totals and the
	// credit note's other_zero one.
	if got := fields(); got != "13=40.00 19=30.00" {
		t.Fatalf("FR0600 %s", got)
	}
	// A full credit credits what is left of each treatment apart.
	full := run[ledger.CreditNoteView](t, db, "acme", "credit_note.create", map[string]any{"invoice_number": inv.Number, "issue_date": "2026-12-06",
		"reason": "r", "full": true})
	if len(full.Lines) != 2 || full.Lines[0].VATTreatment != ledger.TreatmentExempt || full.Lines[0].Net != "40.00" ||
		full.Lines[1].VATTreatment != ledger.TreatmentOtherZero || full.Lines[1].Net != "30.00" {
		t.Fatalf("full credit lines %+v", full.Lines)
	}
	if got := fields(); got != "13=0.00 19=0.00" {
		t.Fatalf("FR0600 after the full credit %s", got)
	}
}

// The database takes only the treatments each table's lines may have.
func TestDatabaseRefusesUnknownTreatments(t *testing.T) {
	t.Parallel()
	db := newDB(t, 2)
	ctx := testContext(t)
	for table, insert := range map[string]string{
		"invoice_lines_vat_treatment": `INSERT INTO invoice_lines (invoice_id, line_no, description, quantity, unit_price, vat_rate, net, vat, gross, vat_treatment)
			VALUES ($1, 1, 'x', 1, 1, 0, 1, 0, 1, 'reverse_charge_domestic')`,
		"credit_note_lines_vat_treatment": `INSERT INTO credit_note_lines (credit_note_id, line_no, description, vat_rate, net, vat, gross, vat_treatment)
			VALUES ($1, 1, 'x', 0, 1, 0, 1, 'PVM13')`,
		"purchase_invoice_lines_vat_treatment": `INSERT INTO purchase_invoice_lines (purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross, vat_treatment)
			VALUES ($1, 1, 'x', 1, 1, 0, '6000', 1, 0, 1, 'export')`,
	} {
		_, err := db.Exec(ctx, insert, uuid.New())
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != table {
			t.Errorf("%s: %v, want a check violation of it", table, err)
		}
	}
}

// Services bought from suppliers outside the EU (a US SaaS licence, Swiss
// consulting) are reverse-charged under Art. 95: the company posts the
// VAT as input and output VAT, owes the supplier the net only, and the
// month's return has their value in field 23, never in 24 (services from
// EU VAT payers), their VAT in 32, 25 and 35, and nothing payable. A
// supplier's credit note and a reversal keep the line's treatment; a
// supplier in a member state, or at home, is refused the treatment.
//
// Figures, by hand, all at 21 %: US-1 1 × 1200.00, VAT 252.00; CH-9
// 4 × 62.50 = 250.00, VAT 52.50; CH-10 the same, reversed; US-1-K credits
// 200.00 of US-1, VAT 42.00. Field 23: 1200.00 + 250.00 + 250.00 − 250.00
// − 200.00 = 1250.00; field 32, and 25 and 35: 252.00 + 52.50 + 52.50 −
// 52.50 − 42.00 = 262.50; field 36: 262.50 − 262.50 = 0.00. The journal:
// 6000 1250.00, 1300 262.50, 2100 −1250.00, 2300 −262.50.
func TestServicesFromOutsideTheEU(t *testing.T) {
	t.Parallel()
	db := newDB(t, 4)
	createRegisteredCompany(t, db, "acme")
	purchase := func(doc, day string, supplier map[string]any, quantity, price string) map[string]any {
		return map[string]any{"supplier": supplier, "document_number": doc, "issue_date": day, "due_date": "2027-01-10", "currency": "EUR",
			"lines": []any{map[string]any{"description": "Services", "quantity": quantity, "unit_price": price, "vat_rate": "21",
				"vat_treatment": "reverse_charge_non_eu_services"}}}
	}
	us := map[string]any{"id": "s-us", "name": "Cloud Software Inc", "country": "US"}
	ch := map[string]any{"id": "s-ch", "name": "Beratung AG", "vat_id": "CHE123456789", "country": "CH"}

	us1 := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchase("US-1", "2026-12-03", us, "1", "1200.00"))
	if us1.Net != "1200.00" || us1.VAT != "252.00" || us1.Gross != "1452.00" || us1.SelfAssessedVAT != "252.00" || us1.Payable != "1200.00" ||
		us1.Lines[0].VATTreatment != ledger.TreatmentReverseChargeNonEUServices {
		t.Fatalf("US-1 %+v", us1)
	}
	requireEntryLines(t, db, uuid.MustParse(us1.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "1200.00", "0"}, {ledger.AccountInputVAT, "252.00", "0"},
		{ledger.AccountPayables, "0", "1200.00"}, {ledger.AccountOutputVAT, "0", "252.00"}})
	ch9 := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchase("CH-9", "2026-12-04", ch, "4", "62.50"))
	if ch9.SelfAssessedVAT != "52.50" || ch9.Payable != "250.00" {
		t.Fatalf("CH-9 %+v", ch9)
	}

	// A supplier in a member state is refused, the treatment that fits
	// named; so is one at home. Neither leaves a document.
	for _, c := range []struct {
		supplier map[string]any
		want     string
	}{
		{map[string]any{"id": "s-de", "name": "Cloud GmbH", "vat_id": "DE987654321", "country": "DE"},
			"lines[0].vat_treatment: reverse_charge_non_eu_services is a purchase from a supplier outside the EU, not from DE, a member state: " +
				"services from a VAT payer of another member state are reverse_charge_eu_services"},
		{map[string]any{"id": "s-lt", "name": "Debesys UAB", "vat_id": "LT100000000030", "country": "LT"},
			"lines[0].vat_treatment: reverse_charge_non_eu_services is a purchase from a supplier outside the EU, not from LT, the company's own country " +
				"(standard, or reverse_charge_domestic under Art. 96)"},
	} {
		if e := runErr(t, db, "acme", "purchase_invoice.record", purchase("X-1", "2026-12-05", c.supplier, "1", "10.00"), ledger.CodeInvalidCommand); e.Message != c.want {
			t.Errorf("refusal\n got %q\nwant %q", e.Message, c.want)
		}
	}
	// Nor does a US supplier pass as one from the EU: the refusal names
	// the treatment for it.
	eu := purchase("X-2", "2026-12-05", us, "1", "10.00")
	eu["lines"].([]any)[0].(map[string]any)["vat_treatment"] = "reverse_charge_eu_services"
	if e := runErr(t, db, "acme", "purchase_invoice.record", eu, ledger.CodeInvalidCommand); !strings.HasSuffix(e.Message,
		"not from US: services from a supplier outside the EU are reverse_charge_non_eu_services") {
		t.Errorf("reverse_charge_eu_services from the US: %q", e.Message)
	}

	// The supplier's credit note by amount takes the line's treatment;
	// its entry reverses the reverse charge on both sides.
	k := run[ledger.PurchaseCreditNoteView](t, db, "acme", "purchase_credit_note.record", map[string]any{
		"purchase_invoice_id": us1.PurchaseInvoiceID, "document_number": "US-1-K", "issue_date": "2026-12-09", "reason": "seats removed",
		"amounts": []any{map[string]any{"vat_rate": "21", "net": "200.00"}}})
	if k.Net != "200.00" || k.VAT != "42.00" || k.SelfAssessedVAT != "42.00" || k.Payable != "200.00" ||
		k.Lines[0].VATTreatment != ledger.TreatmentReverseChargeNonEUServices {
		t.Fatalf("US-1-K %+v", k)
	}
	requireEntryLines(t, db, uuid.MustParse(k.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "0", "200.00"}, {ledger.AccountInputVAT, "0", "42.00"},
		{ledger.AccountPayables, "200.00", "0"}, {ledger.AccountOutputVAT, "42.00", "0"}})
	// A purchase recorded in error is reversed with its treatment.
	ch10 := run[ledger.PurchaseInvoiceView](t, db, "acme", "purchase_invoice.record", purchase("CH-10", "2026-12-05", ch, "4", "62.50"))
	rev := run[ledger.PurchaseReversalView](t, db, "acme", "purchase_invoice.reverse", map[string]any{
		"purchase_invoice_id": ch10.PurchaseInvoiceID, "reason": "recorded in error"})
	requireEntryLines(t, db, uuid.MustParse(rev.JournalEntryID), []wantLine{
		{ledger.AccountExpenses, "0", "250.00"}, {ledger.AccountInputVAT, "0", "52.50"},
		{ledger.AccountPayables, "250.00", "0"}, {ledger.AccountOutputVAT, "52.50", "0"}})

	// The return: field 23 and 32, not 24; the reverse charge nets to
	// zero, by rate too.
	p := ledger.Period{Year: 2026, Month: 12}
	vr := vatReturnOf(t, db, p)
	if got, want := fr0600Fields(vr), "23=1250.00 25=262.50 32=262.50 35=262.50 36=0.00"; got != want {
		t.Fatalf("FR0600\n got %s\nwant %s", got, want)
	}
	c := vr.Currencies[0]
	if c.OutputVAT != "0.00" || c.SelfAssessedVAT != "262.50" || c.InputVAT != "262.50" || c.Payable != "0.00" {
		t.Fatalf("return: output %s, self-assessed %s, input %s, payable %s", c.OutputVAT, c.SelfAssessedVAT, c.InputVAT, c.Payable)
	}
	for name, rates := range map[string][]ledger.RateView{"self-assessed": c.SelfAssessed, "input": c.Input} {
		if len(rates) != 1 || rates[0].Rate != "21" || rates[0].Net != "1250.00" || rates[0].VAT != "262.50" {
			t.Errorf("%s by rate %+v, want 21 %%: 1250.00 and 262.50", name, rates)
		}
	}
	requireBalances(t, db, "acme", map[string]string{
		ledger.AccountExpenses:  "1250.00",
		ledger.AccountInputVAT:  "262.50",
		ledger.AccountPayables:  "-1250.00",
		ledger.AccountOutputVAT: "-262.50",
	})
	requireBooksBalance(t, db)
	requireAuditClean(t, db)

	// The i.SAF file, valid against VMI's schema: every document PVM20,
	// the credit note a KS of US-1, the reversal beside CH-10.
	_, docs := isafDocuments(t, db, "acme", p)
	want := []string{
		"US-1 SF PVM20 1200.00/252.00 issued 2026-12-03 registered 2026-12-03",
		"CH-9 SF PVM20 250.00/52.50 issued 2026-12-04 registered 2026-12-04",
		"CH-10 SF PVM20 250.00/52.50 issued 2026-12-05 registered 2026-12-05",
		"CH-10 SF PVM20 -250.00/-52.50 issued 2026-12-05 registered 2026-12-05",
		"US-1-K KS ref US-1 2026-12-03 PVM20 -200.00/-42.00 issued 2026-12-09 registered 2026-12-09",
	}
	if strings.Join(docs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("i.SAF purchases:\n%s\nwant\n%s", strings.Join(docs, "\n"), strings.Join(want, "\n"))
	}
}
