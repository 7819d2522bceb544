package ledger

import "github.com/shopspring/decimal"

// FR0600Field is a field of Lithuania's VAT return, the FR0600 form
// (PVM deklaracija), by the number the form gives it.
//
// docs/vat.md lists each field with the sources its number and meaning are
// taken from: the form's field names as VMI's publication on filling it
// gives them (fields 11-28), VMI's answers on which fields a transaction
// goes to (17, 18, 21, 23, 24, 25, 32-35), and the VAT fields of part V
// (29-36) as accounting software maps them. The form has one field for
// the value of domestic supplies at any rate (11) and splits their VAT by
// rate (29, 30, 31); VAT a buyer assesses goes to a field by its legal
// basis (32 Art. 95, 33 Art. 96, 34 goods from other member states), and
// to the purchase VAT (25) and the VAT deducted (35) as well.
type FR0600Field struct {
	Number int
	Label  string
}

// FR0600Amount is a field's amount in a VAT return.
type FR0600Amount struct {
	FR0600Field
	Amount decimal.Decimal
}

// The FR0600 fields a VAT return fills.
var (
	FR0600Taxable          = FR0600Field{11, "taxable value of supplies taxed in Lithuania at the standard and reduced rates (PVM1, PVM2, PVM3)"}
	FR0600Exempt           = FR0600Field{13, "value of supplies exempt from VAT (PVM5)"}
	FR0600Export           = FR0600Field{17, "value of exported goods, 0 % (PVM12)"}
	FR0600IntraEUGoods     = FR0600Field{18, "value of goods supplied to VAT payers of other member states, 0 % (PVM13)"}
	FR0600OtherZero        = FR0600Field{19, "value of other supplies at 0 % (PVM14)"}
	FR0600IntraEUServices  = FR0600Field{20, "value of services supplied to taxable persons of other member states, taxed where they are, Art. 13(2) (PVM15)"}
	FR0600EUGoodsAcquired  = FR0600Field{21, "taxable value of goods acquired from other member states (PVM16)"}
	FR0600ForeignServices  = FR0600Field{23, "taxable value of services acquired from other countries (PVM20, PVM21)"}
	FR0600EUServices       = FR0600Field{24, "of field 23: services acquired from VAT payers of other member states (PVM21)"}
	FR0600PurchaseVAT      = FR0600Field{25, "VAT on goods and services acquired, VAT assessed by the company included"}
	FR0600StandardVAT      = FR0600Field{29, "VAT on supplies at the standard rate, 21 % (PVM1)"}
	FR0600ReducedVAT       = FR0600Field{30, "VAT on supplies at the reduced rate of 9 %, from 2026 12 % (PVM2)"}
	FR0600SuperReducedVAT  = FR0600Field{31, "VAT on supplies at the reduced rate of 5 % (PVM3)"}
	FR0600ForeignVAT       = FR0600Field{32, "VAT the company assesses on services from foreign taxable persons, Art. 95 (field 23)"}
	FR0600DomesticVAT      = FR0600Field{33, "VAT the company assesses as buyer under Art. 96 (PVM25)"}
	FR0600EUGoodsVAT       = FR0600Field{34, "VAT the company assesses on goods acquired from other member states (field 21)"}
	FR0600InputVATDeducted = FR0600Field{35, "purchase and import VAT deducted"}
	FR0600Payable          = FR0600Field{36, "VAT payable, refundable when negative: 29 + 30 + 31 + 32 + 33 + 34 - 35"}
)

// FR0600Fields are the fields in the order of the form.
var FR0600Fields = []FR0600Field{
	FR0600Taxable, FR0600Exempt, FR0600Export, FR0600IntraEUGoods, FR0600OtherZero, FR0600IntraEUServices,
	FR0600EUGoodsAcquired, FR0600ForeignServices, FR0600EUServices,
	FR0600PurchaseVAT,
	FR0600StandardVAT, FR0600ReducedVAT, FR0600SuperReducedVAT, FR0600ForeignVAT, FR0600DomesticVAT, FR0600EUGoodsVAT,
	FR0600InputVATDeducted, FR0600Payable,
}

type fieldAmount struct {
	field  int
	amount decimal.Decimal
}

// fr0600Of is where a document's total of one rate and treatment goes on
// the form (signed: a credit note's reduce). A line posted before lines
// carried a treatment is standard above 0 % and exempt at 0 %, as its i.SAF
// code (PVM5) says. A purchase's VAT is purchase VAT (25) and, as the
// ledger deducts all of it, deducted (35); a reverse charge's VAT is also
// VAT the company owes, in the field of its legal basis, and its value goes
// to part II where the form has a field for it (none for Art. 96
// purchases). Field 36 sums what each total adds to the VAT payable.
func fr0600Of(sales bool, t RateTotal) []fieldAmount {
	tr := t.Treatment
	if tr == TreatmentUnstated {
		tr = TreatmentStandard
		if t.Rate.IsZero() {
			tr = TreatmentExempt
		}
	}
	if !sales {
		out := []fieldAmount{{FR0600PurchaseVAT.Number, t.VAT}, {FR0600InputVATDeducted.Number, t.VAT}}
		payable := t.VAT.Neg()
		switch tr {
		case TreatmentReverseChargeEUGoods:
			out = append(out, fieldAmount{FR0600EUGoodsAcquired.Number, t.Net}, fieldAmount{FR0600EUGoodsVAT.Number, t.VAT})
			payable = decimal.Zero
		case TreatmentReverseChargeEUServices:
			// The treatment needs a supplier in another member state, so
			// its value is also of field 24's.
			out = append(out, fieldAmount{FR0600ForeignServices.Number, t.Net}, fieldAmount{FR0600EUServices.Number, t.Net},
				fieldAmount{FR0600ForeignVAT.Number, t.VAT})
			payable = decimal.Zero
		case TreatmentReverseChargeNonEUServices:
			// A supplier outside the EU is no VAT payer of a member state:
			// field 23 without 24.
			out = append(out, fieldAmount{FR0600ForeignServices.Number, t.Net}, fieldAmount{FR0600ForeignVAT.Number, t.VAT})
			payable = decimal.Zero
		case TreatmentReverseChargeDomestic:
			out = append(out, fieldAmount{FR0600DomesticVAT.Number, t.VAT})
			payable = decimal.Zero
		}
		return append(out, fieldAmount{FR0600Payable.Number, payable})
	}
	switch tr {
	case TreatmentExempt:
		return []fieldAmount{{FR0600Exempt.Number, t.Net}}
	case TreatmentExport:
		return []fieldAmount{{FR0600Export.Number, t.Net}}
	case TreatmentIntraEUGoods:
		return []fieldAmount{{FR0600IntraEUGoods.Number, t.Net}}
	case TreatmentIntraEUServices:
		return []fieldAmount{{FR0600IntraEUServices.Number, t.Net}}
	case TreatmentOtherZero:
		return []fieldAmount{{FR0600OtherZero.Number, t.Net}}
	}
	out := []fieldAmount{{FR0600Taxable.Number, t.Net}}
	switch isafTaxCode(t.Rate) {
	case "PVM1":
		out = append(out, fieldAmount{FR0600StandardVAT.Number, t.VAT})
	case "PVM2":
		out = append(out, fieldAmount{FR0600ReducedVAT.Number, t.VAT})
	case "PVM3":
		out = append(out, fieldAmount{FR0600SuperReducedVAT.Number, t.VAT})
	}
	// A rate the form has no VAT field for (none of Lithuania's) is still
	// VAT payable.
	return append(out, fieldAmount{FR0600Payable.Number, t.VAT})
}
