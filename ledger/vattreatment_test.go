package ledger_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// A sales line's treatment is what it states, or what its rate and its
// customer make unambiguous; a 0 % line that neither settles is refused
// with the choices named, and a treatment that contradicts the rate or
// the customer is refused.
func TestSalesTreatments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		country, vatID   string
		rate, treatment  string
		want             ledger.VATTreatment
		wantErr, errWord string
	}{
		{name: "a rate above 0 is standard", country: "LT", vatID: "LT100000000010", rate: "21", want: ledger.TreatmentStandard},
		{name: "0 % to a VAT payer of another member state: goods or services?", country: "DE", vatID: "DE123456789", rate: "0",
			errWord: "intra_eu_goods for goods (PVM13, FR0600 field 18), intra_eu_services for services taxed where the customer is (PVM15, field 20)"},
		{name: "0 % to a Greek VAT payer (prefix EL): goods or services?", country: "GR", vatID: "EL123456789", rate: "0", errWord: "customer.vat_id EL123456789"},
		{name: "stated intra_eu_goods", country: "DE", vatID: "DE123456789", rate: "0", treatment: "intra_eu_goods", want: ledger.TreatmentIntraEUGoods},
		{name: "stated intra_eu_services", country: "GR", vatID: "EL123456789", rate: "0", treatment: "intra_eu_services", want: ledger.TreatmentIntraEUServices},
		{name: "services without a VAT id", country: "LV", rate: "0", treatment: "intra_eu_services", errWord: "VAT id of another EU member state"},
		{name: "0 % outside the EU", country: "US", rate: "0", want: ledger.TreatmentExport},
		{name: "0 % at home", country: "LT", vatID: "LT100000000010", rate: "0",
			wantErr: "lines[0].vat_treatment: a 0 % line to a customer in LT with VAT id LT100000000010 needs its VAT treatment: one of exempt, export, intra_eu_goods, intra_eu_services, other_zero"},
		{name: "0 % to an EU customer without a VAT id", country: "LV", rate: "0", errWord: "needs its VAT treatment"},
		{name: "0 % to an EU customer whose VAT id is of another state", country: "LV", vatID: "DE123456789", rate: "0", errWord: "needs its VAT treatment"},
		{name: "stated exempt at home", country: "LT", rate: "0", treatment: "exempt", want: ledger.TreatmentExempt},
		{name: "stated other_zero", country: "LT", rate: "0", treatment: "other_zero", want: ledger.TreatmentOtherZero},
		{name: "stated export to the EU", country: "LV", rate: "0", treatment: "export", want: ledger.TreatmentExport},
		{name: "intra-EU without a VAT id", country: "LV", rate: "0", treatment: "intra_eu_goods", errWord: "VAT id of another EU member state"},
		{name: "intra-EU at home", country: "LT", vatID: "LT100000000010", rate: "0", treatment: "intra_eu_goods", errWord: "VAT id of another EU member state"},
		{name: "standard at 0", country: "LT", rate: "0", treatment: "standard", errWord: "rate above 0"},
		{name: "export at 21", country: "US", rate: "21", treatment: "export", errWord: "is a 0 % treatment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := invoiceBody()
			b["customer"] = map[string]any{"id": "c", "name": "C", "country": tt.country, "vat_id": tt.vatID}
			line0(b)["vat_rate"] = tt.rate
			if tt.treatment != "" {
				line0(b)["vat_treatment"] = tt.treatment
			}
			cmd, err := ledger.Decode("invoice.create", mustJSON(t, b))
			if err != nil {
				t.Fatal(err)
			}
			inv := cmd.(*ledger.CreateInvoice)
			e := inv.CheckVATRates("LT")
			switch {
			case tt.wantErr != "" || tt.errWord != "":
				if e == nil || e.Code != ledger.CodeInvalidCommand || (tt.wantErr != "" && e.Message != tt.wantErr) || !strings.Contains(e.Message, tt.errWord) {
					t.Fatalf("got %v, want invalid_command %q%q", e, tt.wantErr, tt.errWord)
				}
			case e != nil:
				t.Fatalf("refused: %v", e)
			case inv.Lines[0].VATTreatment != tt.want:
				t.Fatalf("treatment %q, want %q", inv.Lines[0].VATTreatment, tt.want)
			}
		})
	}
}

// A treatment that is not a sales one is refused when the body is decoded.
func TestSalesTreatmentNames(t *testing.T) {
	t.Parallel()
	b := invoiceBody()
	line0(b)["vat_treatment"] = "reverse_charge_domestic"
	if _, err := ledger.Decode("invoice.create", mustJSON(t, b)); err == nil || !strings.Contains(err.Error(), "lines[0].vat_treatment") {
		t.Fatalf("decode: %v", err)
	}
}

func purchase(t *testing.T, country, rate, treatment string) *ledger.RecordPurchaseInvoice {
	t.Helper()
	line := map[string]any{"description": "x", "quantity": "2", "unit_price": "50.00", "vat_rate": rate}
	if treatment != "" {
		line["vat_treatment"] = treatment
	}
	cmd, err := ledger.Decode("purchase_invoice.record", mustJSON(t, map[string]any{
		"supplier":        map[string]any{"id": "s", "name": "S", "country": country},
		"document_number": "D-1", "issue_date": "2026-12-02", "due_date": "2026-12-20", "currency": "EUR",
		"lines": []any{line},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return cmd.(*ledger.RecordPurchaseInvoice)
}

func TestPurchaseTreatments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		country, rate, treatment string
		want                     ledger.VATTreatment
		errWord                  string
	}{
		{"LT", "21", "", ledger.TreatmentStandard, ""},
		{"LT", "0", "", "", "a 0 % purchase line needs its VAT treatment: exempt, other_zero, or for reverse charge one of reverse_charge_eu_goods, " +
			"reverse_charge_eu_services, reverse_charge_non_eu_services, reverse_charge_domestic with the rate the VAT is assessed at"},
		{"LT", "0", "exempt", ledger.TreatmentExempt, ""},
		{"DE", "21", "reverse_charge_eu_goods", ledger.TreatmentReverseChargeEUGoods, ""},
		{"FR", "21", "reverse_charge_eu_services", ledger.TreatmentReverseChargeEUServices, ""},
		{"LT", "21", "reverse_charge_domestic", ledger.TreatmentReverseChargeDomestic, ""},
		{"LT", "21", "reverse_charge_eu_goods", "", "from another EU member state, not from LT"},
		{"US", "21", "reverse_charge_eu_services", "", "from another EU member state, not from US: services from a supplier outside the EU are reverse_charge_non_eu_services"},
		// Services from outside the EU: any country not in the EU list,
		// a state of the EEA or a neighbour included, at any rate above 0.
		{"US", "21", "reverse_charge_non_eu_services", ledger.TreatmentReverseChargeNonEUServices, ""},
		{"CH", "12", "reverse_charge_non_eu_services", ledger.TreatmentReverseChargeNonEUServices, ""},
		{"NO", "5", "reverse_charge_non_eu_services", ledger.TreatmentReverseChargeNonEUServices, ""},
		{"GB", "21", "reverse_charge_non_eu_services", ledger.TreatmentReverseChargeNonEUServices, ""},
		{"DE", "21", "reverse_charge_non_eu_services", "",
			"lines[0].vat_treatment: reverse_charge_non_eu_services is a purchase from a supplier outside the EU, not from DE, a member state: " +
				"services from a VAT payer of another member state are reverse_charge_eu_services"},
		{"GR", "21", "reverse_charge_non_eu_services", "", "not from GR, a member state: services from a VAT payer of another member state are reverse_charge_eu_services"},
		{"LT", "21", "reverse_charge_non_eu_services", "", "not from LT, the company's own country (standard, or reverse_charge_domestic under Art. 96)"},
		{"US", "0", "reverse_charge_non_eu_services", "", "reverse_charge_non_eu_services needs the rate the VAT is assessed at (vat_rate above 0), not 0"},
		{"DE", "21", "reverse_charge_domestic", "", "from a supplier in LT, not in DE"},
		{"DE", "0", "reverse_charge_eu_goods", "", "needs the rate the VAT is assessed at"},
	}
	for _, tt := range tests {
		p := purchase(t, tt.country, tt.rate, tt.treatment)
		e := p.CheckVATRates("LT")
		switch {
		case tt.errWord != "":
			if e == nil || e.Code != ledger.CodeInvalidCommand || !strings.Contains(e.Message, tt.errWord) {
				t.Errorf("%+v: got %v, want %q", tt, e, tt.errWord)
			}
		case e != nil:
			t.Errorf("%+v: refused: %v", tt, e)
		case p.Lines[0].VATTreatment != tt.want:
			t.Errorf("%+v: treatment %q", tt, p.Lines[0].VATTreatment)
		}
	}
	if _, err := ledger.Decode("purchase_invoice.record", []byte(`{"supplier":{"id":"s","name":"S","country":"LT"},"document_number":"D","issue_date":"2026-12-02","due_date":"2026-12-02","currency":"EUR",
		"lines":[{"description":"x","quantity":"1","unit_price":"1","vat_rate":"0","vat_treatment":"export"}]}`)); err == nil {
		t.Error("a purchase line with the sales treatment export decodes")
	}
}

// A reverse-charged purchase line posts its VAT as input and as output
// VAT: the supplier is owed the net only, and the entry's VAT nets to
// zero while both sides reach the books.
func TestReverseChargePosting(t *testing.T) {
	t.Parallel()
	p := purchase(t, "DE", "21", "reverse_charge_eu_goods")
	p.Lines = append(p.Lines, ledger.PurchaseLine{Description: "y", Quantity: ledger.D("1"), UnitPrice: ledger.D("10.00"), VATRate: ledger.D("21"), Account: "6000", VATTreatment: ledger.TreatmentStandard})
	if e := p.CheckVATRates("LT"); e != nil {
		t.Fatal(e)
	}
	pi, entry := ledger.BookPurchase("acme", p, p.IssueDate, nil, uuid.New(), uuid.New())
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range entry.Lines {
		got[l.Account] = l.CompanyDebit.Sub(l.CompanyCredit).String()
	}
	want := map[string]string{"6000": "110", "1300": "23.1", "2300": "-21", "2100": "-112.1"}
	for acc, amount := range want {
		if got[acc] != amount {
			t.Errorf("%s: %s, want %s (entry %v)", acc, got[acc], amount, got)
		}
	}
	if v := pi.View(); v.SelfAssessedVAT != "21.00" || v.Payable != "112.10" || v.Gross != "133.10" {
		t.Errorf("view: self-assessed %s, payable %s, gross %s", v.SelfAssessedVAT, v.Payable, v.Gross)
	}
}

// Services from a supplier outside the EU are reverse-charged like those
// from the EU: 2 x 50.00 at 21 % is 100.00 net and 21.00 VAT the company
// assesses, Dr 6000 100.00, Dr 1300 21.00, Cr 2100 100.00 (all the
// supplier is owed), Cr 2300 21.00.
func TestNonEUServicesPosting(t *testing.T) {
	t.Parallel()
	p := purchase(t, "US", "21", "reverse_charge_non_eu_services")
	if e := p.CheckVATRates("LT"); e != nil {
		t.Fatal(e)
	}
	pi, entry := ledger.BookPurchase("acme", p, p.IssueDate, nil, uuid.New(), uuid.New())
	if err := entry.Check(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range entry.Lines {
		got = append(got, fmt.Sprintf("%s %s/%s", l.Account, l.CompanyDebit.StringFixed(2), l.CompanyCredit.StringFixed(2)))
	}
	if want := "6000 100.00/0.00 1300 21.00/0.00 2100 0.00/100.00 2300 0.00/21.00"; strings.Join(got, " ") != want {
		t.Errorf("entry\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if v := pi.View(); v.Net != "100.00" || v.VAT != "21.00" || v.Gross != "121.00" || v.SelfAssessedVAT != "21.00" || v.Payable != "100.00" {
		t.Errorf("view: net %s, VAT %s, gross %s, self-assessed %s, payable %s", v.Net, v.VAT, v.Gross, v.SelfAssessedVAT, v.Payable)
	}
}

// A document total's i.SAF code is its treatment's, its rate's for a
// standard line, and PVM5 for a 0 % line posted before lines carried a
// treatment.
func TestISAFLineCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		rate      string
		treatment ledger.VATTreatment
		want      string
	}{
		{"21", ledger.TreatmentStandard, "PVM1"},
		{"12", ledger.TreatmentStandard, "PVM2"},
		{"9", ledger.TreatmentUnstated, "PVM2"},
		{"0", ledger.TreatmentUnstated, "PVM5"},
		{"0", ledger.TreatmentExempt, "PVM5"},
		{"0", ledger.TreatmentExport, "PVM12"},
		{"0", ledger.TreatmentIntraEUGoods, "PVM13"},
		{"0", ledger.TreatmentIntraEUServices, "PVM15"},
		{"0", ledger.TreatmentOtherZero, "PVM14"},
		{"21", ledger.TreatmentReverseChargeEUGoods, "PVM16"},
		{"21", ledger.TreatmentReverseChargeEUServices, "PVM21"},
		{"21", ledger.TreatmentReverseChargeNonEUServices, "PVM20"},
		{"5", ledger.TreatmentReverseChargeNonEUServices, "PVM20"},
		{"21", ledger.TreatmentReverseChargeDomestic, "PVM25"},
	} {
		if got := ledger.ISAFLineCode(ledger.D(tt.rate).Decimal, tt.treatment); got != tt.want {
			t.Errorf("%s %% %q: %s, want %s", tt.rate, tt.treatment, got, tt.want)
		}
	}
}

// Each treatment goes to its own FR0600 field: supplies at every rate to
// field 11 with their VAT split by rate (29, 30, 31), 0 % supplies by legal
// basis; a credit note reduces its invoice's field; a reverse charge's value
// goes to part II where the form has a field for it, its VAT to the field of
// its legal basis (34, 32, 33) and to 25 and 35, so it changes nothing
// payable (36).
func TestVATReturnFR0600Fields(t *testing.T) {
	t.Parallel()
	eur, _ := ledger.LookupCurrency("EUR")
	day := func(s string) ledger.Date { d, _ := ledger.ParseDate(s); return d }
	rt := func(r string, tr ledger.VATTreatment, net, vat string) ledger.RateTotal {
		return ledger.RateTotal{Rate: ledger.D(r).Decimal, Treatment: tr, Net: ledger.D(net).Decimal, VAT: ledger.D(vat).Decimal}
	}
	co := ledger.Company{ID: "acme", Country: "LT", Currency: "EUR"}
	r := ledger.NewRegister(co, ledger.Period{Year: 2026, Month: 12}, []ledger.RegisterDocument{
		{Type: ledger.DocumentInvoice, Number: "1", Date: day("2026-12-01"), Currency: eur, Rates: []ledger.RateTotal{
			rt("21", ledger.TreatmentStandard, "100.00", "21.00"), rt("12", ledger.TreatmentStandard, "10.00", "1.20"),
			rt("5", ledger.TreatmentStandard, "20.00", "1.00"), rt("0", ledger.TreatmentExport, "50.00", "0"), rt("0", ledger.TreatmentIntraEUGoods, "70.00", "0"),
		}},
		{Type: ledger.DocumentCreditNote, Number: "2", Date: day("2026-12-02"), Currency: eur, Rates: []ledger.RateTotal{
			rt("0", ledger.TreatmentIntraEUGoods, "20.00", "0"),
		}},
		{Type: ledger.DocumentInvoice, Number: "3", Date: day("2026-12-03"), Currency: eur, Rates: []ledger.RateTotal{
			rt("0", ledger.TreatmentUnstated, "5.00", "0"), rt("0", ledger.TreatmentOtherZero, "6.00", "0"),
		}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "P", Date: day("2026-12-04"), Currency: eur, Rates: []ledger.RateTotal{
			rt("21", ledger.TreatmentStandard, "40.00", "8.40"), rt("21", ledger.TreatmentReverseChargeEUGoods, "200.00", "42.00"),
			rt("21", ledger.TreatmentReverseChargeEUServices, "30.00", "6.30"), rt("21", ledger.TreatmentReverseChargeDomestic, "10.00", "2.10"),
			rt("12", ledger.TreatmentReverseChargeNonEUServices, "50.00", "6.00"),
		}},
	})
	v := ledger.NewVATReturn(r).View()
	c := v.Currencies[0]
	var got []string
	for _, f := range c.Fields {
		got = append(got, fmt.Sprintf("%d=%s", f.Field, f.Amount))
	}
	// Field 23 is services from the EU and from outside it (30.00 +
	// 50.00), 24 the EU's alone, 32 the VAT of both (6.30 + 6.00).
	want := "11=130.00 13=5.00 17=50.00 18=50.00 19=6.00 21=200.00 23=80.00 24=30.00 25=64.80 " +
		"29=21.00 30=1.20 31=1.00 32=12.30 33=2.10 34=42.00 35=64.80 36=14.80"
	if strings.Join(got, " ") != want {
		t.Errorf("fields\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if c.OutputVAT != "23.20" || c.SelfAssessedVAT != "56.40" || c.InputVAT != "64.80" || c.Payable != "14.80" {
		t.Errorf("output %s, self-assessed %s, input %s, payable %s", c.OutputVAT, c.SelfAssessedVAT, c.InputVAT, c.Payable)
	}
}

// A month with only a service bought outside the EU fills field 23 and
// not 24: 760.00 at 21 % is 159.60 VAT, in 32 as VAT owed and in 25 and 35
// as VAT deducted, so nothing is payable (36 is 0.00).
func TestVATReturnNonEUServicesFields(t *testing.T) {
	t.Parallel()
	eur, _ := ledger.LookupCurrency("EUR")
	day, _ := ledger.ParseDate("2026-12-04")
	co := ledger.Company{ID: "acme", Country: "LT", Currency: "EUR"}
	r := ledger.NewRegister(co, ledger.Period{Year: 2026, Month: 12}, []ledger.RegisterDocument{
		{Type: ledger.DocumentPurchaseInvoice, Number: "US-1", Date: day, Currency: eur,
			Counterparty: ledger.Party{ID: "sup-us", Name: "Cloud Inc", Country: "US"},
			Rates: []ledger.RateTotal{{Rate: ledger.D("21").Decimal, Treatment: ledger.TreatmentReverseChargeNonEUServices,
				Net: ledger.D("760.00").Decimal, VAT: ledger.D("159.60").Decimal}}},
	})
	c := ledger.NewVATReturn(r).View().Currencies[0]
	var got []string
	for _, f := range c.Fields {
		got = append(got, fmt.Sprintf("%d=%s", f.Field, f.Amount))
	}
	if want := "23=760.00 25=159.60 32=159.60 35=159.60 36=0.00"; strings.Join(got, " ") != want {
		t.Errorf("fields\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if c.OutputVAT != "0.00" || c.SelfAssessedVAT != "159.60" || c.InputVAT != "159.60" || c.Payable != "0.00" {
		t.Errorf("output %s, self-assessed %s, input %s, payable %s", c.OutputVAT, c.SelfAssessedVAT, c.InputVAT, c.Payable)
	}
}

// A register with a line of every treatment renders as
// testdata/isaf/treatments.xml: each total has its treatment's code, two
// 0 % treatments on one invoice are two totals, and the file follows the
// specification.
func TestISAFTreatments(t *testing.T) {
	defer func(v string) { ledger.SoftwareVersion = v }(ledger.SoftwareVersion)
	ledger.SoftwareVersion = "v1.2.3-test"
	eur, _ := ledger.LookupCurrency("EUR")
	day := func(s string) ledger.Date { d, _ := ledger.ParseDate(s); return d }
	rt := func(r string, tr ledger.VATTreatment, net, vat string) ledger.RateTotal {
		return ledger.RateTotal{Rate: ledger.D(r).Decimal, Treatment: tr, Net: ledger.D(net).Decimal, VAT: ledger.D(vat).Decimal}
	}
	co := ledger.Company{ID: "acme", Name: "Acme UAB", Country: "LT", Currency: "EUR", VATID: "LT100000000099", RegistrationNumber: "100000001"}
	de := ledger.Party{ID: "cust-de", Name: "Käufer GmbH", VATID: "DE123456789", Country: "DE"}
	r := ledger.NewRegister(co, ledger.Period{Year: 2026, Month: 12}, []ledger.RegisterDocument{
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000001", Date: day("2026-12-02"), Counterparty: de, Currency: eur, Rates: []ledger.RateTotal{
			rt("0", ledger.TreatmentIntraEUGoods, "900.00", "0.00"), rt("0", ledger.TreatmentOtherZero, "60.00", "0.00")}},
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000002", Date: day("2026-12-03"), Currency: eur,
			Counterparty: ledger.Party{ID: "cust-us", Name: "Buyer Inc", Country: "US"},
			Rates:        []ledger.RateTotal{rt("0", ledger.TreatmentExport, "300.00", "0.00")}},
		{Type: ledger.DocumentInvoice, Number: "INV-2026-000003", Date: day("2026-12-04"), Currency: eur,
			Counterparty: ledger.Party{ID: "cust-lt", Name: "UAB Draudimas", VATID: "LT100000000010", Country: "LT"},
			Rates:        []ledger.RateTotal{rt("0", ledger.TreatmentExempt, "40.00", "0.00"), rt("21", ledger.TreatmentStandard, "100.00", "21.00")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "2026-0917", Date: day("2026-12-05"), Currency: eur, Recorded: day("2026-12-06"),
			Counterparty: ledger.Party{ID: "sup-de", Name: "Beratung GmbH", VATID: "DE987654321", Country: "DE"},
			Rates:        []ledger.RateTotal{rt("21", ledger.TreatmentReverseChargeEUServices, "760.00", "159.60")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "L-77", Date: day("2026-12-06"), Currency: eur, Recorded: day("2026-12-06"),
			Counterparty: ledger.Party{ID: "sup-pl", Name: "Dostawca Sp. z o.o.", VATID: "PL1234567890", Country: "PL"},
			Rates:        []ledger.RateTotal{rt("21", ledger.TreatmentReverseChargeEUGoods, "2000.00", "420.00")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "ST-5", Date: day("2026-12-07"), Currency: eur, Recorded: day("2026-12-07"),
			Counterparty: ledger.Party{ID: "sup-lt", Name: "Statyba UAB", VATID: "LT100000000030", Country: "LT"},
			Rates:        []ledger.RateTotal{rt("21", ledger.TreatmentReverseChargeDomestic, "1000.00", "210.00")}},
		{Type: ledger.DocumentPurchaseInvoice, Number: "US-2026-311", Date: day("2026-12-08"), Currency: eur, Recorded: day("2026-12-08"),
			Counterparty: ledger.Party{ID: "sup-us", Name: "Cloud Software Inc", Country: "US"},
			Rates:        []ledger.RateTotal{rt("21", ledger.TreatmentReverseChargeNonEUServices, "400.00", "84.00")}},
	})
	out := writeISAF(t, r)
	golden := filepath.Join("testdata", "isaf", "treatments.xml")
	if *updateISAF {
		if err := os.WriteFile(golden, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("i.SAF differs from %s (go test -run TestISAFTreatments -update-isaf rewrites it):\n%s", golden, out)
	}
	if errs := checkISAF(out); len(errs) > 0 {
		t.Fatalf("i.SAF breaks the specification:\n%s\n%s", strings.Join(errs, "\n"), out)
	}
	var f ledger.ISAFFile
	if err := xml.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, invs := range []*ledger.ISAFInvoices{f.SourceDocuments.PurchaseInvoices, f.SourceDocuments.SalesInvoices} {
		for _, inv := range invs.Invoices {
			for _, tot := range inv.DocumentTotals.Totals {
				codes = append(codes, inv.InvoiceNo+":"+tot.TaxCode.Value+":"+tot.TaxableValue+":"+tot.Amount.Value)
			}
		}
	}
	if got, want := strings.Join(codes, " "), "2026-0917:PVM21:760.00:159.60 L-77:PVM16:2000.00:420.00 ST-5:PVM25:1000.00:210.00 US-2026-311:PVM20:400.00:84.00 "+
		"INV-2026-000001:PVM13:900.00:0.00 INV-2026-000001:PVM14:60.00:0.00 INV-2026-000002:PVM12:300.00:0.00 "+
		"INV-2026-000003:PVM5:40.00:0.00 INV-2026-000003:PVM1:100.00:21.00"; got != want {
		t.Errorf("totals\n got %s\nwant %s", got, want)
	}
}

// The fields are listed in the order of the form, each once, so a return
// shows them as the form does.
func TestFR0600FieldsInFormOrder(t *testing.T) {
	t.Parallel()
	for i := 1; i < len(ledger.FR0600Fields); i++ {
		if a, b := ledger.FR0600Fields[i-1], ledger.FR0600Fields[i]; a.Number >= b.Number {
			t.Errorf("field %d (%s) before field %d (%s)", a.Number, a.Label, b.Number, b.Label)
		}
	}
}
