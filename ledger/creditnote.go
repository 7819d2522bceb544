package ledger

import (
	"slices"
	"sort"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// CreateCreditNote is the body of credit_note.create: a full or partial
// credit of one issued invoice, which it always references (EU VAT
// directive art. 219). Exactly one of Full, Lines and Amounts says what is
// credited.
type CreateCreditNote struct {
	InvoiceID     string         `json:"invoice_id,omitempty"`
	InvoiceNumber string         `json:"invoice_number,omitempty"`
	Series        string         `json:"series,omitempty"`
	IssueDate     Date           `json:"issue_date"`
	Reason        string         `json:"reason"`
	Full          bool           `json:"full,omitempty"`
	Lines         []CreditLine   `json:"lines,omitempty"`
	Amounts       []CreditAmount `json:"amounts,omitempty"`
}

// CreditLine credits a quantity of one invoice line, at its unit price and
// VAT rate. Line numbers start at 1.
type CreditLine struct {
	Line     int     `json:"line"`
	Quantity Decimal `json:"quantity"`
}

// CreditAmount credits a net amount at one of the invoice's VAT rates, for
// discounts and corrections that are not about quantities.
type CreditAmount struct {
	VATRate     Decimal `json:"vat_rate"`
	Net         Decimal `json:"net"`
	Description string  `json:"description,omitempty"`
}

func (*CreateCreditNote) CommandName() string { return "credit_note.create" }

func (c *CreateCreditNote) validate() *Error {
	if c.Series == "" {
		c.Series = SeriesCreditNote
	}
	switch {
	case (c.InvoiceID == "") == (c.InvoiceNumber == ""):
		return invalid("invoice_id", "give exactly one of invoice_id and invoice_number")
	case c.InvoiceID != "" && uuid.Validate(c.InvoiceID) != nil:
		return invalid("invoice_id", "%q is not a UUID", c.InvoiceID)
	case c.IssueDate.IsZero():
		return invalid("issue_date", "is required")
	}
	if err := firstError(seriesErr(c.Series), required("reason", c.Reason, 500)); err != nil {
		return err
	}
	ways := 0
	for _, set := range []bool{c.Full, len(c.Lines) > 0, len(c.Amounts) > 0} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return invalid("full", "give exactly one of full, lines and amounts")
	}
	seen := map[int]bool{}
	for i, l := range c.Lines {
		f := fieldf("lines[%d]", i)
		switch {
		case l.Line < 1:
			return invalid(f+".line", "must be an invoice line number (from 1)")
		case seen[l.Line]:
			return invalid(f+".line", "line %d is listed twice", l.Line)
		case !l.Quantity.IsPositive():
			return invalid(f+".quantity", "must be greater than zero")
		}
		seen[l.Line] = true
	}
	rates := map[string]bool{}
	for i, a := range c.Amounts {
		f := fieldf("amounts[%d]", i)
		switch {
		case !a.Net.IsPositive():
			return invalid(f+".net", "must be greater than zero")
		case rates[a.VATRate.String()]:
			return invalid(f+".vat_rate", "rate %s is listed twice", a.VATRate)
		}
		if err := maxLen(f+".description", a.Description, 500); err != nil {
			return err
		}
		rates[a.VATRate.String()] = true
	}
	return nil
}

// InvoiceState is an issued invoice with what has been credited and paid
// so far: what a credit note or payment is checked against.
type InvoiceState struct {
	ID         uuid.UUID
	Number     string
	CustomerID string
	Currency   Currency
	IssueDate  Date
	Gross      decimal.Decimal
	Lines      []IssuedLine
	// Credited per VAT rate (key: rate.String()) and in total.
	CreditedByRate map[string]RateTotal
	CreditedGross  decimal.Decimal
	// Paid by payments' allocations, and by the customer's credit.
	Paid          decimal.Decimal
	CreditApplied decimal.Decimal
	// ToCredit is what credit notes took beyond what was open on the
	// invoice: it went to the customer's credit, out of what was paid.
	ToCredit decimal.Decimal
	// Conversion is the invoice's into the company's currency: its credit
	// notes convert at the invoice's rate (nil: in the company's currency).
	Conversion *Conversion
	// GrossCompany is the invoice's gross in the company's currency, and
	// RelievedCompany what credit notes, payments and applied credit
	// relieved its receivable by in it (see Relieve).
	GrossCompany, RelievedCompany decimal.Decimal
	// Opening is true for an invoice of the previous books an opening
	// left open (opening_balances.record): it has no lines, and only
	// payments and the customer's credit settle it.
	Opening bool
}

// OpenCompany is what is open of the receivable in the company's currency.
func (s *InvoiceState) OpenCompany() decimal.Decimal { return s.GrossCompany.Sub(s.RelievedCompany) }

// Relief is what settling amount of the invoice relieves its receivable by
// in the company's currency. An invoice in the company's currency is
// relieved by amount; one posted in another currency before documents were
// converted has no amount in the company's currency to relieve, and is
// relieved at the settlement's rate, at.
func (s *InvoiceState) Relief(amount decimal.Decimal, at *Conversion) decimal.Decimal {
	if s.Conversion == nil {
		return at.Convert(amount)
	}
	return Relieve(s.Conversion.To, amount, s.Open(), s.OpenCompany())
}

// IssuedLine is an invoice line with what line-based credits took from it.
type IssuedLine struct {
	No          int
	Description string
	Quantity    decimal.Decimal
	UnitPrice   decimal.Decimal
	VATRate     decimal.Decimal
	// VATTreatment is the line's (TreatmentUnstated for a line posted
	// before lines carried one).
	VATTreatment VATTreatment
	Net, VAT     decimal.Decimal
	// Credited by line-based credit notes.
	CreditedQuantity decimal.Decimal
	CreditedNet      decimal.Decimal
	CreditedVAT      decimal.Decimal
}

// NetPaid is what was paid on the invoice and stays on it: payments and
// applied credit, less what credit notes moved to the customer's credit.
func (s *InvoiceState) NetPaid() decimal.Decimal {
	return s.Paid.Add(s.CreditApplied).Sub(s.ToCredit)
}

// Open is what the customer still owes: gross less credits and what was
// paid. A credit note never takes it below zero: what it credits beyond
// goes to the customer's credit (CreditNote.ToCustomerCredit).
func (s *InvoiceState) Open() decimal.Decimal {
	return s.Gross.Sub(s.CreditedGross).Sub(s.NetPaid())
}

// Status names where the invoice stands.
func (s *InvoiceState) Status() string {
	return InvoiceStatus(s.Gross, s.CreditedGross, s.NetPaid())
}

// Credit records credit note lines on the invoice, so the state is what
// reading the invoice's history back would give once they are posted: the
// next credit or payment of the same invoice in the same batch is checked
// against it.
func (s *InvoiceState) Credit(lines []CreditNoteLine) {
	for _, l := range lines {
		key := l.VATRate.String()
		t := s.CreditedByRate[key]
		if t.Rate.IsZero() && t.Net.IsZero() && t.VAT.IsZero() {
			t.Rate = l.VATRate
		}
		t.Net, t.VAT = t.Net.Add(l.Net), t.VAT.Add(l.VAT)
		s.CreditedByRate[key] = t
		s.CreditedGross = s.CreditedGross.Add(l.Net).Add(l.VAT)
		if l.InvoiceLine > 0 && l.InvoiceLine <= len(s.Lines) {
			il := &s.Lines[l.InvoiceLine-1]
			if l.Quantity.Valid {
				il.CreditedQuantity = il.CreditedQuantity.Add(l.Quantity.Decimal)
			}
			il.CreditedNet, il.CreditedVAT = il.CreditedNet.Add(l.Net), il.CreditedVAT.Add(l.VAT)
		}
	}
}

// Pay records a payment's allocation to the invoice, relieving its
// receivable by company in the company's currency (see Credit).
func (s *InvoiceState) Pay(amount, company decimal.Decimal) {
	s.Paid = s.Paid.Add(amount)
	s.RelievedCompany = s.RelievedCompany.Add(company)
}

// Invoice statuses.
const (
	InvoiceOpen          = "open"
	InvoicePartiallyPaid = "partially_paid"
	InvoicePaid          = "paid"
	InvoiceCredited      = "credited"
)

// InvoiceStatus derives the status from the amounts: fully credited,
// settled by payments (and credits), partly paid, or open.
func InvoiceStatus(gross, credited, paid decimal.Decimal) string {
	open := gross.Sub(credited).Sub(paid)
	switch {
	case credited.GreaterThanOrEqual(gross) && paid.IsZero():
		return InvoiceCredited
	case !open.IsPositive():
		return InvoicePaid
	case paid.IsPositive():
		return InvoicePartiallyPaid
	}
	return InvoiceOpen
}

// CreditNoteLine is one computed line of a credit note.
type CreditNoteLine struct {
	InvoiceLine int // 0 for an amount-based line
	Description string
	Quantity    decimal.NullDecimal
	UnitPrice   decimal.NullDecimal
	VATRate     decimal.Decimal
	// VATTreatment is that of the invoice's lines it credits.
	VATTreatment VATTreatment
	Net, VAT     decimal.Decimal
}

// CreditNote is an issued credit note.
type CreditNote struct {
	ID        uuid.UUID
	Company   string
	Series    string
	Number    string
	Sequence  int64
	Invoice   *InvoiceState
	IssueDate Date
	Reason    string
	Lines     []CreditNoteLine
	Net, VAT  decimal.Decimal
	// ToCustomerCredit is the part of the gross beyond what was open on
	// the invoice (it had been paid): it becomes the customer's credit.
	ToCustomerCredit decimal.Decimal
	// Converted is the credit note in the company's currency, at the
	// invoice's rate; ReceivableCompany is what it relieved the invoice's
	// receivable by in it, ToCustomerCreditCompany what it gave the
	// customer's credit.
	Converted                                  Totals
	ReceivableCompany, ToCustomerCreditCompany decimal.Decimal
	JournalEntryID                             uuid.UUID
}

// Gross is net plus VAT.
func (cn *CreditNote) Gross() decimal.Decimal { return cn.Net.Add(cn.VAT) }

// Movement is the credit note's change of the customer's credit; false
// when it took nothing beyond what was open.
func (cn *CreditNote) Movement() (CreditMovement, bool) {
	if !cn.ToCustomerCredit.IsPositive() {
		return CreditMovement{}, false
	}
	return CreditMovement{
		ID: cn.ID, CustomerID: cn.Invoice.CustomerID, Currency: cn.Invoice.Currency, Kind: CreditFromCreditNote,
		Amount: cn.ToCustomerCredit, AmountCompany: cn.ToCustomerCreditCompany, SourceID: cn.ID, InvoiceID: cn.Invoice.ID,
		Date: cn.IssueDate, JournalEntryID: cn.JournalEntryID,
	}, true
}

// Record adds the credit note to the invoice's state, for the batch's
// later commands.
func (cn *CreditNote) Record() {
	cn.Invoice.Credit(cn.Lines)
	cn.Invoice.ToCredit = cn.Invoice.ToCredit.Add(cn.ToCustomerCredit)
	cn.Invoice.RelievedCompany = cn.Invoice.RelievedCompany.Add(cn.ReceivableCompany)
}

// PlanCredit computes the lines of a credit note for inv and refuses, with
// conflict, to credit more than is left: per line for quantities, per VAT
// rate for net and VAT. Crediting everything that is left of a line or a
// rate takes the exact remainder, so a series of partial credits adds up to
// the invoice to the cent.
func PlanCredit(inv *InvoiceState, c *CreateCreditNote) ([]CreditNoteLine, *Error) {
	cur := inv.Currency
	hundred := decimal.NewFromInt(100)
	left := inv.rateRemainders()
	var lines []CreditNoteLine
	switch {
	case c.Full:
		for _, r := range sortedRates(left) {
			rem := left[r.String()]
			if rem.Net.IsZero() && rem.VAT.IsZero() {
				continue
			}
			desc := "Credit of the remainder of invoice " + inv.Number
			if tr, err := inv.treatmentAt(rem.Rate); err == nil {
				lines = append(lines, CreditNoteLine{Description: desc, VATRate: rem.Rate, VATTreatment: tr, Net: rem.Net, VAT: rem.VAT})
				continue
			}
			// Lines of more than one treatment at the rate: a credit at
			// such a rate is by line (treatmentAt refuses the others), so
			// what is left of each treatment is what is left of its lines.
			for _, tr := range inv.treatmentsAt(rem.Rate) {
				var net, vat decimal.Decimal
				for _, l := range inv.Lines {
					if l.VATRate.Equal(rem.Rate) && l.VATTreatment == tr {
						net, vat = net.Add(l.Net.Sub(l.CreditedNet)), vat.Add(l.VAT.Sub(l.CreditedVAT))
					}
				}
				if !net.IsZero() || !vat.IsZero() {
					lines = append(lines, CreditNoteLine{Description: desc, VATRate: rem.Rate, VATTreatment: tr, Net: net, VAT: vat})
				}
			}
		}
	case len(c.Lines) > 0:
		for _, cl := range c.Lines {
			if cl.Line > len(inv.Lines) {
				return nil, conflictf(inv, "invoice %s has no line %d", inv.Number, cl.Line)
			}
			il := inv.Lines[cl.Line-1]
			remaining := il.Quantity.Sub(il.CreditedQuantity)
			if cl.Quantity.GreaterThan(remaining) {
				return nil, conflictf(inv, "line %d of invoice %s has %s left to credit, not %s", cl.Line, inv.Number, remaining, cl.Quantity)
			}
			net := cur.Round(cl.Quantity.Mul(il.UnitPrice))
			vat := cur.Round(net.Mul(il.VATRate).Div(hundred))
			if cl.Quantity.Equal(remaining) {
				net, vat = il.Net.Sub(il.CreditedNet), il.VAT.Sub(il.CreditedVAT)
			}
			lines = append(lines, CreditNoteLine{
				InvoiceLine: cl.Line, Description: il.Description,
				Quantity:  decimal.NewNullDecimal(cl.Quantity.Decimal),
				UnitPrice: decimal.NewNullDecimal(il.UnitPrice),
				VATRate:   il.VATRate, VATTreatment: il.VATTreatment, Net: net, VAT: vat,
			})
		}
	default:
		for _, a := range c.Amounts {
			if !cur.Fits(a.Net.Decimal) {
				return nil, invalid("amounts.net", "%s has more decimals than %s allows", a.Net, cur.Code)
			}
			rem, ok := left[a.VATRate.String()]
			if !ok {
				return nil, conflictf(inv, "invoice %s has no lines at VAT rate %s", inv.Number, a.VATRate)
			}
			vat := cur.Round(a.Net.Mul(a.VATRate.Decimal).Div(hundred))
			if a.Net.Equal(rem.Net) {
				vat = rem.VAT
			}
			desc := a.Description
			if desc == "" {
				desc = "Credit on invoice " + inv.Number
			}
			tr, err := inv.treatmentAt(rem.Rate)
			if err != nil {
				return nil, err
			}
			lines = append(lines, CreditNoteLine{Description: desc, VATRate: rem.Rate, VATTreatment: tr, Net: a.Net.Decimal, VAT: vat})
		}
	}
	// Per rate, the note may not take more net or VAT than is left.
	taken := map[string]RateTotal{}
	for _, l := range lines {
		k := l.VATRate.String()
		t := taken[k]
		t.Rate, t.Net, t.VAT = l.VATRate, t.Net.Add(l.Net), t.VAT.Add(l.VAT)
		taken[k] = t
	}
	for k, t := range taken {
		rem := left[k]
		if t.Net.GreaterThan(rem.Net) || t.VAT.GreaterThan(rem.VAT) {
			return nil, conflictf(inv, "credit exceeds what is left on invoice %s at VAT rate %s: %s net and %s VAT left, %s and %s asked",
				inv.Number, t.Rate, cur.Format(rem.Net), cur.Format(rem.VAT), cur.Format(t.Net), cur.Format(t.VAT))
		}
	}
	var gross decimal.Decimal
	for _, l := range lines {
		gross = gross.Add(l.Net).Add(l.VAT)
	}
	if !gross.IsPositive() {
		return nil, conflictf(inv, "nothing is left to credit on invoice %s", inv.Number)
	}
	return lines, nil
}

func conflictf(inv *InvoiceState, format string, args ...any) *Error {
	e := Errorf(CodeConflict, format, args...)
	e.Details = map[string]any{"invoice_id": inv.ID.String(), "number": inv.Number}
	return e
}

// treatmentAt is the VAT treatment of the invoice's lines at rate, which
// a credit by rate takes: refused when the lines at rate have more than
// one, as the credit could not say which supply it reduces.
func (s *InvoiceState) treatmentAt(rate decimal.Decimal) (VATTreatment, *Error) {
	found := s.treatmentsAt(rate)
	switch len(found) {
	case 0:
		return TreatmentUnstated, nil
	case 1:
		return found[0], nil
	}
	return "", conflictf(s, "invoice %s has lines at VAT rate %s under more than one VAT treatment (%s): credit them by line",
		s.Number, rate, treatmentNames(found))
}

// treatmentsAt are the treatments of the invoice's lines at rate, in
// line order.
func (s *InvoiceState) treatmentsAt(rate decimal.Decimal) []VATTreatment {
	var found []VATTreatment
	for _, l := range s.Lines {
		if l.VATRate.Equal(rate) && !slices.Contains(found, l.VATTreatment) {
			found = append(found, l.VATTreatment)
		}
	}
	return found
}

// rateRemainders is, per VAT rate, the invoice's net and VAT less all credits.
func (s *InvoiceState) rateRemainders() map[string]RateTotal {
	out := map[string]RateTotal{}
	for _, l := range s.Lines {
		k := l.VATRate.String()
		r := out[k]
		r.Rate, r.Net, r.VAT = l.VATRate, r.Net.Add(l.Net), r.VAT.Add(l.VAT)
		out[k] = r
	}
	for k, c := range s.CreditedByRate {
		r := out[k]
		r.Net, r.VAT = r.Net.Sub(c.Net), r.VAT.Sub(c.VAT)
		out[k] = r
	}
	return out
}

func sortedRates(m map[string]RateTotal) []decimal.Decimal {
	rates := make([]decimal.Decimal, 0, len(m))
	for _, r := range m {
		rates = append(rates, r.Rate)
	}
	sort.Slice(rates, func(i, j int) bool { return rates[i].LessThan(rates[j]) })
	return rates
}

// IssueCreditNote builds the credit note and its journal entry, which
// reverses the invoice's: Dr revenue (net) and Dr output VAT (VAT) /
// Cr receivables (gross).
func IssueCreditNote(company string, c *CreateCreditNote, inv *InvoiceState, lines []CreditNoteLine, id, entryID uuid.UUID, sequence int64) (*CreditNote, *JournalEntry) {
	cn := &CreditNote{
		ID: id, Company: company, Series: c.Series, Sequence: sequence,
		Number:  FormatNumber(c.Series, c.IssueDate, sequence),
		Invoice: inv, IssueDate: c.IssueDate, Reason: c.Reason, Lines: lines, JournalEntryID: entryID,
	}
	amounts, rates := make([]LineAmounts, len(lines)), make([]decimal.Decimal, len(lines))
	for i, l := range lines {
		cn.Net, cn.VAT = cn.Net.Add(l.Net), cn.VAT.Add(l.VAT)
		net, vat := inv.Conversion.Convert(l.Net), inv.Conversion.Convert(l.VAT)
		amounts[i], rates[i] = LineAmounts{Net: net, VAT: vat, Gross: net.Add(vat)}, l.VATRate
	}
	cn.Converted = TotalsFromLines(amounts, rates)
	// What was already paid cannot be owed less: beyond what is open the
	// credit is the customer's, on 2200, to apply or refund.
	open := decimal.Max(inv.Open(), decimal.Zero)
	fromReceivables := decimal.Min(cn.Gross(), open)
	cn.ToCustomerCredit = cn.Gross().Sub(fromReceivables)
	// In the company's currency revenue and VAT are the converted lines;
	// the receivable is relieved as open items are, the customer's credit
	// gets its part at the invoice's rate, and what rounding leaves is an
	// exchange difference.
	if fromReceivables.IsPositive() {
		cn.ReceivableCompany = inv.Relief(fromReceivables, nil)
	}
	cn.ToCustomerCreditCompany = inv.Conversion.Convert(cn.ToCustomerCredit)
	cur, co := inv.Currency.Code, cn.Converted
	var jl []JournalLine
	jl = appendNonZero(jl, debit(AccountRevenue, cur, cn.Net).at(co.Net))
	jl = appendNonZero(jl, debit(AccountOutputVAT, cur, cn.VAT).at(co.VAT))
	jl = appendNonZero(jl, credit(AccountReceivables, cur, fromReceivables).at(cn.ReceivableCompany))
	jl = appendNonZero(jl, credit(AccountCustomerCredits, cur, cn.ToCustomerCredit).at(cn.ToCustomerCreditCompany))
	jl = balanceExchange(jl, cur)
	return cn, &JournalEntry{
		ID: entryID, Company: company, Date: c.IssueDate,
		Description: "Credit note " + cn.Number + " for invoice " + inv.Number,
		SourceType:  "credit_note", SourceID: id, Lines: jl,
	}
}

// CreditNoteView is a credit note as results and events show it.
type CreditNoteView struct {
	CreditNoteID  string               `json:"credit_note_id"`
	Number        string               `json:"number"`
	Series        string               `json:"series"`
	Sequence      int64                `json:"sequence"`
	InvoiceID     string               `json:"invoice_id"`
	InvoiceNumber string               `json:"invoice_number"`
	IssueDate     string               `json:"issue_date"`
	Reason        string               `json:"reason"`
	Currency      string               `json:"currency"`
	Lines         []CreditNoteLineView `json:"lines"`
	Net           string               `json:"net"`
	VAT           string               `json:"vat"`
	Gross         string               `json:"gross"`
	InvoiceStatus string               `json:"invoice_status"`
	InvoiceOpen   string               `json:"invoice_open"`
	// ToCustomerCredit is what went to the customer's credit (see
	// CreditNote.ToCustomerCredit).
	ToCustomerCredit string `json:"to_customer_credit"`
	// Exchange is the invoice's rate and the credit note's amounts in the
	// company's currency, for an invoice in another currency.
	Exchange       *ConversionView `json:"exchange,omitempty"`
	JournalEntryID string          `json:"journal_entry_id"`
}

// CreditNoteLineView is one line of a CreditNoteView.
type CreditNoteLineView struct {
	InvoiceLine int    `json:"invoice_line,omitempty"`
	Description string `json:"description"`
	Quantity    string `json:"quantity,omitempty"`
	UnitPrice   string `json:"unit_price,omitempty"`
	VATRate     string `json:"vat_rate"`
	// VATTreatment is that of the credited invoice lines.
	VATTreatment VATTreatment `json:"vat_treatment,omitempty"`
	Net          string       `json:"net"`
	VAT          string       `json:"vat"`
	Gross        string       `json:"gross"`
}

// View renders the credit note; the invoice's status is the one after it.
func (cn *CreditNote) View() CreditNoteView {
	cur := cn.Invoice.Currency
	credited := cn.Invoice.CreditedGross.Add(cn.Gross())
	netPaid := cn.Invoice.NetPaid().Sub(cn.ToCustomerCredit)
	v := CreditNoteView{
		CreditNoteID: cn.ID.String(), Number: cn.Number, Series: cn.Series, Sequence: cn.Sequence,
		InvoiceID: cn.Invoice.ID.String(), InvoiceNumber: cn.Invoice.Number,
		IssueDate: cn.IssueDate.String(), Reason: cn.Reason, Currency: cur.Code,
		Net: cur.Format(cn.Net), VAT: cur.Format(cn.VAT), Gross: cur.Format(cn.Gross()),
		InvoiceStatus:    InvoiceStatus(cn.Invoice.Gross, credited, netPaid),
		InvoiceOpen:      cur.Format(cn.Invoice.Gross.Sub(credited).Sub(netPaid)),
		ToCustomerCredit: cur.Format(cn.ToCustomerCredit),
		Exchange:         cn.Invoice.Conversion.View(cn.Converted),
		JournalEntryID:   cn.JournalEntryID.String(),
	}
	for _, l := range cn.Lines {
		lv := CreditNoteLineView{
			InvoiceLine: l.InvoiceLine, Description: l.Description, VATRate: l.VATRate.String(), VATTreatment: l.VATTreatment,
			Net: cur.Format(l.Net), VAT: cur.Format(l.VAT), Gross: cur.Format(l.Net.Add(l.VAT)),
		}
		if l.Quantity.Valid {
			lv.Quantity = l.Quantity.Decimal.String()
		}
		if l.UnitPrice.Valid {
			lv.UnitPrice = cur.Price(l.UnitPrice.Decimal)
		}
		v.Lines = append(v.Lines, lv)
	}
	return v
}
