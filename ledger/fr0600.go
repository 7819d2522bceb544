package ledger

import "github.com/shopspring/decimal"

// FR0600Field is a field of Lithuania's VAT return, the FR0600 form
// (PVM deklaracija), by the number the form gives it.
//
// The numbers are those of the form as docs/vat.md lists them, with what
// each is known from: the fields of the taxable values of supplies (11,
// 13, 17, 18, 19) and of acquisitions the buyer assesses (23, 24, 25)
// follow the form's layout of supplies by legal basis; the numbers of the
// reduced rates' values (20, 21) and of the VAT amounts (29, 32-35) are
// from the form's layout as remembered, not from a copy of its filling
// rules (VMI order VA-29, as amended), and are marked to be checked
// against the current form before a return is filed from them.
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
	FR0600Standard         = FR0600Field{11, "taxable value of supplies at the standard rate (21 %, PVM1)"}
	FR0600Exempt           = FR0600Field{13, "value of supplies exempt from VAT (PVM5)"}
	FR0600Export           = FR0600Field{17, "value of exported goods, 0 % (PVM12)"}
	FR0600IntraEUGoods     = FR0600Field{18, "value of goods supplied to VAT payers of other member states, 0 % (PVM13)"}
	FR0600OtherZero        = FR0600Field{19, "value of other supplies at 0 % (PVM14)"}
	FR0600Reduced          = FR0600Field{20, "taxable value of supplies at the reduced rate of Art. 19(3) (9 %, from 2026 12 %, PVM2)"}
	FR0600SuperReduced     = FR0600Field{21, "taxable value of supplies at the reduced rate of Art. 19(4) (5 %, PVM3)"}
	FR0600EUGoodsAcquired  = FR0600Field{23, "taxable value of goods acquired from other member states (PVM16)"}
	FR0600EUServices       = FR0600Field{24, "taxable value of services bought from VAT payers of other member states, VAT assessed by the buyer (PVM21)"}
	FR0600DomesticReverse  = FR0600Field{25, "taxable value of goods and services bought under Art. 96, VAT assessed by the buyer (PVM25)"}
	FR0600OutputVAT        = FR0600Field{29, "VAT on supplies (fields 11, 20, 21)"}
	FR0600EUGoodsVAT       = FR0600Field{32, "VAT assessed on goods acquired from other member states (field 23)"}
	FR0600EUServicesVAT    = FR0600Field{33, "VAT assessed on services bought from other member states (field 24)"}
	FR0600DomesticVAT      = FR0600Field{34, "VAT assessed on Art. 96 purchases (field 25)"}
	FR0600InputVATDeducted = FR0600Field{35, "input VAT deducted, self-assessed VAT included"}
)

// FR0600Fields are the fields in the order of the form.
var FR0600Fields = []FR0600Field{
	FR0600Standard, FR0600Exempt, FR0600Export, FR0600IntraEUGoods, FR0600OtherZero, FR0600Reduced, FR0600SuperReduced,
	FR0600EUGoodsAcquired, FR0600EUServices, FR0600DomesticReverse,
	FR0600OutputVAT, FR0600EUGoodsVAT, FR0600EUServicesVAT, FR0600DomesticVAT, FR0600InputVATDeducted,
}

type fieldAmount struct {
	field  int
	amount decimal.Decimal
}

// fr0600Of is where a document's total of one rate and treatment goes on
// the form (signed: a credit note's reduce). A line posted before lines
// carried a treatment is standard above 0 % and exempt at 0 %, as its i.SAF
// code (PVM5) says. A purchase's value goes to a field only when the
// company assesses its VAT; its VAT is always deducted.
func fr0600Of(sales bool, t RateTotal) []fieldAmount {
	tr := t.Treatment
	if tr == TreatmentUnstated {
		tr = TreatmentStandard
		if t.Rate.IsZero() {
			tr = TreatmentExempt
		}
	}
	if !sales {
		out := []fieldAmount{{FR0600InputVATDeducted.Number, t.VAT}}
		switch tr {
		case TreatmentReverseChargeEUGoods:
			out = append(out, fieldAmount{FR0600EUGoodsAcquired.Number, t.Net}, fieldAmount{FR0600EUGoodsVAT.Number, t.VAT})
		case TreatmentReverseChargeEUServices:
			out = append(out, fieldAmount{FR0600EUServices.Number, t.Net}, fieldAmount{FR0600EUServicesVAT.Number, t.VAT})
		case TreatmentReverseChargeDomestic:
			out = append(out, fieldAmount{FR0600DomesticReverse.Number, t.Net}, fieldAmount{FR0600DomesticVAT.Number, t.VAT})
		}
		return out
	}
	switch tr {
	case TreatmentExempt:
		return []fieldAmount{{FR0600Exempt.Number, t.Net}}
	case TreatmentExport:
		return []fieldAmount{{FR0600Export.Number, t.Net}}
	case TreatmentIntraEUGoods:
		return []fieldAmount{{FR0600IntraEUGoods.Number, t.Net}}
	case TreatmentOtherZero:
		return []fieldAmount{{FR0600OtherZero.Number, t.Net}}
	}
	vat := fieldAmount{FR0600OutputVAT.Number, t.VAT}
	switch isafTaxCode(t.Rate) {
	case "PVM1":
		return []fieldAmount{{FR0600Standard.Number, t.Net}, vat}
	case "PVM2":
		return []fieldAmount{{FR0600Reduced.Number, t.Net}, vat}
	case "PVM3":
		return []fieldAmount{{FR0600SuperReduced.Number, t.Net}, vat}
	}
	// A rate the form has no field for (none of Lithuania's): its VAT is
	// still output VAT.
	return []fieldAmount{vat}
}
