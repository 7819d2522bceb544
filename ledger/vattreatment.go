package ledger

import (
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// VATTreatment is how a document line is taxed: a rate alone cannot tell
// an export from an intra-Community supply or an exempt one (all 0 %), nor
// a supplier's VAT from VAT the buyer assesses itself. The treatment picks
// the line's i.SAF code and its FR0600 fields; docs/vat.md lists them with
// the legal basis of each.
type VATTreatment string

const (
	// TreatmentStandard is VAT charged at the line's rate (21, 12/9, 5 %),
	// the default of a line with a rate above 0.
	TreatmentStandard VATTreatment = "standard"
	// TreatmentExempt is a supply exempt from VAT (PVM Law Articles
	// 20-33): 0 %, i.SAF PVM5.
	TreatmentExempt VATTreatment = "exempt"
	// TreatmentExport is an export of goods (Article 41): 0 %, PVM12.
	TreatmentExport VATTreatment = "export"
	// TreatmentIntraEUGoods is a supply of goods to a VAT payer of another
	// member state (Article 49): 0 %, PVM13. The customer must have that
	// state's VAT id.
	TreatmentIntraEUGoods VATTreatment = "intra_eu_goods"
	// TreatmentIntraEUServices is a service to a VAT payer of another
	// member state whose place of supply is that state (Article 13(2)):
	// not taxed in Lithuania, 0 %, PVM15, FR0600 field 20; like goods to
	// such a customer, it goes into the EC sales list (FR0564). The
	// customer must have that state's VAT id.
	TreatmentIntraEUServices VATTreatment = "intra_eu_services"
	// TreatmentOtherZero is another zero-rated supply (Articles 42-48, 51,
	// 52, 53: international transport, supplies for ships and aircraft,
	// ...): 0 %, PVM14.
	TreatmentOtherZero VATTreatment = "other_zero"
	// TreatmentReverseChargeEUGoods is goods acquired from another member
	// state (Article 122 with 41): the buyer assesses the VAT at the line's
	// rate, PVM16.
	TreatmentReverseChargeEUGoods VATTreatment = "reverse_charge_eu_goods"
	// TreatmentReverseChargeEUServices is services bought from a VAT payer
	// of another member state (Article 95(2)): assessed by the buyer, PVM21.
	TreatmentReverseChargeEUServices VATTreatment = "reverse_charge_eu_services"
	// TreatmentReverseChargeNonEUServices is services bought from a
	// taxable person established outside the EU (Article 95): assessed by
	// the buyer, PVM20. FR0600 has the value in field 23 but not in 24,
	// which holds only services from VAT payers of other member states.
	TreatmentReverseChargeNonEUServices VATTreatment = "reverse_charge_non_eu_services"
	// TreatmentReverseChargeDomestic is a domestic supply whose VAT the
	// buyer assesses (Article 96: scrap, timber, construction work, ...),
	// PVM25.
	TreatmentReverseChargeDomestic VATTreatment = "reverse_charge_domestic"
)

// TreatmentUnstated is the treatment of a line posted before lines carried
// one: a rate above 0 was standard, and a 0 % line reads as PVM5, as it was
// filed then.
const TreatmentUnstated VATTreatment = ""

// SalesTreatments are the treatments a sales invoice line may carry;
// PurchaseTreatments those of a purchase invoice line.
var (
	SalesTreatments = []VATTreatment{
		TreatmentStandard, TreatmentExempt, TreatmentExport, TreatmentIntraEUGoods, TreatmentIntraEUServices, TreatmentOtherZero,
	}
	PurchaseTreatments = []VATTreatment{
		TreatmentStandard, TreatmentExempt, TreatmentOtherZero,
		TreatmentReverseChargeEUGoods, TreatmentReverseChargeEUServices, TreatmentReverseChargeNonEUServices, TreatmentReverseChargeDomestic,
	}
	// reverseCharges are the purchase treatments whose VAT the company
	// assesses at the line's rate.
	reverseCharges = []VATTreatment{
		TreatmentReverseChargeEUGoods, TreatmentReverseChargeEUServices, TreatmentReverseChargeNonEUServices, TreatmentReverseChargeDomestic,
	}
	zeroRatedSales = []VATTreatment{TreatmentExempt, TreatmentExport, TreatmentIntraEUGoods, TreatmentIntraEUServices, TreatmentOtherZero}
	// toOtherMemberState are the 0 % treatments of a line to a VAT payer
	// of another member state: goods or services, which the line's rate
	// cannot tell apart.
	toOtherMemberState = []VATTreatment{TreatmentIntraEUGoods, TreatmentIntraEUServices}
)

// ZeroRated reports whether the treatment charges no VAT at 0 %.
func (t VATTreatment) ZeroRated() bool {
	switch t {
	case TreatmentExempt, TreatmentExport, TreatmentIntraEUGoods, TreatmentIntraEUServices, TreatmentOtherZero:
		return true
	}
	return false
}

// ReverseCharge reports whether the buyer assesses the line's VAT: it is
// both output and input VAT of the buyer, and not owed to the supplier.
func (t VATTreatment) ReverseCharge() bool {
	switch t {
	case TreatmentReverseChargeEUGoods, TreatmentReverseChargeEUServices, TreatmentReverseChargeNonEUServices, TreatmentReverseChargeDomestic:
		return true
	}
	return false
}

// isafCode is the VMI's VAT classifier code of the treatment, "" for the
// standard (and an unstated) treatment, whose code follows the rate.
func (t VATTreatment) isafCode() string {
	switch t {
	case TreatmentExempt:
		return "PVM5"
	case TreatmentExport:
		return "PVM12"
	case TreatmentIntraEUGoods:
		return "PVM13"
	case TreatmentIntraEUServices:
		return "PVM15"
	case TreatmentOtherZero:
		return "PVM14"
	case TreatmentReverseChargeEUGoods:
		return "PVM16"
	case TreatmentReverseChargeEUServices:
		return "PVM21"
	case TreatmentReverseChargeNonEUServices:
		return "PVM20"
	case TreatmentReverseChargeDomestic:
		return "PVM25"
	}
	return ""
}

// ISAFLineCode is the i.SAF TaxCode of a line of rate under treatment
// (see ISAFTaxCode for the rates' own codes).
func ISAFLineCode(rate decimal.Decimal, t VATTreatment) string {
	if c := t.isafCode(); c != "" {
		return c
	}
	return isafTaxCode(rate)
}

// euVATPrefix is the VAT id prefix of each EU member state, by its ISO
// country code (Greece's is EL).
var euVATPrefix = map[string]string{
	"AT": "AT", "BE": "BE", "BG": "BG", "CY": "CY", "CZ": "CZ", "DE": "DE", "DK": "DK", "EE": "EE",
	"ES": "ES", "FI": "FI", "FR": "FR", "GR": "EL", "HR": "HR", "HU": "HU", "IE": "IE", "IT": "IT",
	"LT": "LT", "LU": "LU", "LV": "LV", "MT": "MT", "NL": "NL", "PL": "PL", "PT": "PT", "RO": "RO",
	"SE": "SE", "SI": "SI", "SK": "SK",
}

// InEU reports whether country is an EU member state.
func InEU(country string) bool { _, ok := euVATPrefix[country]; return ok }

// otherMemberStateVATID reports whether a counterparty of country with
// vatID is a VAT payer of another member state than home: an EU country
// not home, and a VAT id with that state's prefix.
func otherMemberStateVATID(home, country, vatID string) bool {
	prefix, ok := euVATPrefix[country]
	return ok && country != home && len(vatID) > 2 && strings.EqualFold(vatID[:2], prefix)
}

func treatmentNames(ts []VATTreatment) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// checkTreatment checks a stated treatment against the line's rate.
func checkTreatment(field string, t VATTreatment, allowed []VATTreatment, rate decimal.Decimal) *Error {
	if !slices.Contains(allowed, t) {
		return invalid(field, "%q is not a VAT treatment of this document's lines (one of: %s)", t, treatmentNames(allowed))
	}
	switch {
	case t == TreatmentStandard && rate.IsZero():
		return invalid(field, "standard VAT is charged at a rate above 0; a 0 %% line is one of: %s", treatmentNames(zeroIn(allowed)))
	case t.ZeroRated() && !rate.IsZero():
		return invalid(field, "%s is a 0 %% treatment, but vat_rate is %s", t, rate)
	case t.ReverseCharge() && rate.IsZero():
		return invalid(field, "%s needs the rate the VAT is assessed at (vat_rate above 0), not 0", t)
	}
	return nil
}

func zeroIn(ts []VATTreatment) []VATTreatment {
	var out []VATTreatment
	for _, t := range ts {
		if t.ZeroRated() {
			out = append(out, t)
		}
	}
	return out
}

// ResolveTreatments states the treatment of every line of the invoice
// issued by a company of country home: a line that states none is standard
// above 0 %, and at 0 % takes what the customer makes unambiguous, an
// export (a customer outside the EU); any other 0 % line must state its
// treatment, a line to a VAT payer of another member state too, as goods
// (intra_eu_goods) and services (intra_eu_services) go to different fields
// and codes and nothing else on the line tells them apart. An intra-EU
// supply needs the customer's VAT id of another member state.
func (c *CreateInvoice) ResolveTreatments(home string) *Error {
	cu := c.Customer
	for i := range c.Lines {
		l := &c.Lines[i]
		field := fieldf("lines[%d].vat_treatment", i)
		if l.VATTreatment == "" {
			switch {
			case !l.VATRate.IsZero():
				l.VATTreatment = TreatmentStandard
			case otherMemberStateVATID(home, cu.Country, cu.VATID):
				e := invalid(field, "a 0 %% line to a VAT payer of another member state (customer.vat_id %s) needs its VAT treatment: %s for goods (PVM13, FR0600 field 18), %s for services taxed where the customer is (PVM15, field 20), or another of %s",
					cu.VATID, TreatmentIntraEUGoods, TreatmentIntraEUServices, treatmentNames(zeroRatedSales))
				e.Details["allowed"] = zeroRatedSales
				return e
			case cu.Country != "" && !InEU(cu.Country) && cu.Country != home:
				l.VATTreatment = TreatmentExport
			default:
				e := invalid(field, "a 0 %% line to a customer in %s%s needs its VAT treatment: one of %s",
					cu.Country, vatIDWords(cu.VATID), treatmentNames(zeroRatedSales))
				e.Details["allowed"] = zeroRatedSales
				return e
			}
		}
		if err := checkTreatment(field, l.VATTreatment, SalesTreatments, l.VATRate.Decimal); err != nil {
			return err
		}
		if slices.Contains(toOtherMemberState, l.VATTreatment) && !otherMemberStateVATID(home, cu.Country, cu.VATID) {
			return invalid(field, "%s needs a customer with a VAT id of another EU member state (customer.country %s, customer.vat_id %q)",
				l.VATTreatment, cu.Country, cu.VATID)
		}
	}
	return nil
}

func vatIDWords(id string) string {
	if id == "" {
		return " without a VAT id"
	}
	return " with VAT id " + id
}

// ResolveTreatments states the treatment of every line of the purchase
// recorded by a company of country home: standard above 0 % when none is
// stated; a 0 % line must state one (exempt, other_zero), as a supplier's
// 0 % says nothing of why. Reverse charge from the EU needs a supplier in
// another member state, on services from outside the EU a supplier outside
// it (and not in home), domestic reverse charge one in home.
func (c *RecordPurchaseInvoice) ResolveTreatments(home string) *Error {
	s := c.Supplier
	for i := range c.Lines {
		l := &c.Lines[i]
		field := fieldf("lines[%d].vat_treatment", i)
		if l.VATTreatment == "" {
			if l.VATRate.IsZero() {
				e := invalid(field, "a 0 %% purchase line needs its VAT treatment: %s, or for reverse charge one of %s with the rate the VAT is assessed at",
					treatmentNames(zeroIn(PurchaseTreatments)), treatmentNames(reverseCharges))
				e.Details["allowed"] = PurchaseTreatments
				return e
			}
			l.VATTreatment = TreatmentStandard
		}
		if err := checkTreatment(field, l.VATTreatment, PurchaseTreatments, l.VATRate.Decimal); err != nil {
			return err
		}
		switch l.VATTreatment {
		case TreatmentReverseChargeEUGoods, TreatmentReverseChargeEUServices:
			if !InEU(s.Country) || s.Country == home {
				hint := ""
				if l.VATTreatment == TreatmentReverseChargeEUServices && !InEU(s.Country) && s.Country != home {
					hint = ": services from a supplier outside the EU are " + string(TreatmentReverseChargeNonEUServices)
				}
				return invalid(field, "%s is a purchase from another EU member state, not from %s%s", l.VATTreatment, s.Country, hint)
			}
		case TreatmentReverseChargeNonEUServices:
			// The refusal names the treatment that fits, as an EU supplier's
			// services differ in code (PVM21) and in field 24.
			switch {
			case s.Country == home:
				return invalid(field, "%s is a purchase from a supplier outside the EU, not from %s, the company's own country (%s, or %s under Art. 96)",
					l.VATTreatment, s.Country, TreatmentStandard, TreatmentReverseChargeDomestic)
			case InEU(s.Country):
				return invalid(field, "%s is a purchase from a supplier outside the EU, not from %s, a member state: services from a VAT payer of another member state are %s",
					l.VATTreatment, s.Country, TreatmentReverseChargeEUServices)
			}
		case TreatmentReverseChargeDomestic:
			if s.Country != home {
				return invalid(field, "%s is a purchase from a supplier in %s, not in %s", l.VATTreatment, home, s.Country)
			}
		}
	}
	return nil
}
