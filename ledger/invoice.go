package ledger

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// CreateInvoice is the body of invoice.create.
type CreateInvoice struct {
	OrderID   string        `json:"order_id"`
	Series    string        `json:"series,omitempty"`
	Customer  Party         `json:"customer"`
	Currency  string        `json:"currency"`
	IssueDate Date          `json:"issue_date"`
	DueDate   Date          `json:"due_date"`
	Lines     []InvoiceLine `json:"lines"`
	// ExchangeRate is units of Currency per 1 unit of the company's
	// currency, for a document in another currency (see Conversion).
	ExchangeRate *Decimal `json:"exchange_rate,omitempty"`
}

// Party is a customer or supplier as printed on a document.
type Party struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	VATID   string `json:"vat_id,omitempty"`
	Country string `json:"country"`
	// Code is its company registration code, optional: the i.SAF
	// register's RegistrationNumber, and a supplier's identity when it
	// has no VAT id (see SupplierKey).
	Code string `json:"code,omitempty"`
}

// InvoiceLine is one line as the sender states it; amounts are computed.
type InvoiceLine struct {
	Description string  `json:"description"`
	Quantity    Decimal `json:"quantity"`
	UnitPrice   Decimal `json:"unit_price"`
	VATRate     Decimal `json:"vat_rate"`
	// VATTreatment is how the line is taxed (see VATTreatment): standard
	// when the rate is above 0 and it states none; a 0 % line without one
	// takes the treatment its customer makes unambiguous, or is refused.
	VATTreatment VATTreatment `json:"vat_treatment,omitempty"`
}

// MaxInvoiceLines bounds the size of one document.
const MaxInvoiceLines = 500

var seriesSyntax = regexp.MustCompile(`^[A-Z0-9]{1,10}$`)

func (*CreateInvoice) CommandName() string { return "invoice.create" }

func (c *CreateInvoice) validate() *Error {
	if c.Series == "" {
		c.Series = SeriesInvoice
	}
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(
		required("order_id", c.OrderID, 100),
		seriesErr(c.Series),
		required("customer.id", c.Customer.ID, 100),
		required("customer.name", c.Customer.Name, 200),
		country("customer.country", c.Customer.Country),
		maxLen("customer.vat_id", c.Customer.VATID, 32),
		maxLen("customer.code", c.Customer.Code, 32),
		curErr,
	); err != nil {
		return err
	}
	switch {
	case c.IssueDate.IsZero():
		return invalid("issue_date", "is required")
	case c.DueDate.IsZero():
		return invalid("due_date", "is required")
	case c.DueDate.Before(c.IssueDate.Time):
		return invalid("due_date", "is before issue_date")
	case len(c.Lines) == 0:
		return invalid("lines", "at least one line is required")
	case len(c.Lines) > MaxInvoiceLines:
		return invalid("lines", "at most %d lines", MaxInvoiceLines)
	}
	for i, l := range c.Lines {
		f := func(name string) string { return fieldf("lines[%d].%s", i, name) }
		if err := required(f("description"), l.Description, 500); err != nil {
			return err
		}
		if !l.Quantity.IsPositive() {
			return invalid(f("quantity"), "must be greater than zero")
		}
		if l.UnitPrice.IsNegative() {
			return invalid(f("unit_price"), "must not be negative (use a credit note to reduce an invoice)")
		}
		if l.VATRate.IsNegative() || l.VATRate.GreaterThan(decimal.NewFromInt(100)) || !l.VATRate.Equal(l.VATRate.Truncate(4)) {
			return invalid(f("vat_rate"), "must be a percentage between 0 and 100 with at most 4 decimals")
		}
		if l.VATTreatment != "" && !slices.Contains(SalesTreatments, l.VATTreatment) {
			return invalid(f("vat_treatment"), "%q is not a VAT treatment of a sales line (one of: %s)", l.VATTreatment, treatmentNames(SalesTreatments))
		}
	}
	if c.ExchangeRate != nil {
		if err := rateErr("exchange_rate", *c.ExchangeRate); err != nil {
			return err
		}
	}
	t := c.Totals(cur)
	for i, a := range t.Lines {
		if !Storable(a.Gross) {
			return invalid(fieldf("lines[%d]", i), "quantity × unit_price with VAT is %s, more than the books can hold (%s)", a.Gross, storableLimit)
		}
	}
	if !Storable(t.Gross) {
		return invalid("lines", "the invoice total is %s, more than the books can hold (%s)", t.Gross, storableLimit)
	}
	if !t.Gross.IsPositive() {
		return invalid("lines", "the invoice total must be greater than zero")
	}
	return nil
}

func seriesErr(s string) *Error {
	if !seriesSyntax.MatchString(s) {
		return invalid("series", "must be 1-10 upper-case letters or digits, not %q", s)
	}
	return nil
}

// LineAmounts are a line's computed amounts.
type LineAmounts struct {
	Net, VAT, Gross decimal.Decimal
}

// RateTotal sums the lines of one VAT rate.
type RateTotal struct {
	Rate decimal.Decimal
	// Treatment is set where lines are summed by rate and treatment (the
	// register and the VAT return); a document's own totals sum by rate.
	Treatment VATTreatment
	Net, VAT  decimal.Decimal
}

// Totals are an invoice's computed amounts.
type Totals struct {
	Lines           []LineAmounts
	ByRate          []RateTotal
	Net, VAT, Gross decimal.Decimal
}

// Totals applies the rounding rule: per line, net = quantity × unit price and
// VAT = net × rate / 100, each rounded half-up to the currency's minor unit;
// document totals are sums of the rounded lines, so the VAT of a document
// always equals the sum of its lines' VAT.
func (c *CreateInvoice) Totals(cur Currency) Totals {
	var t Totals
	byRate := map[string]*RateTotal{}
	hundred := decimal.NewFromInt(100)
	for _, l := range c.Lines {
		net := cur.Round(l.Quantity.Mul(l.UnitPrice.Decimal))
		vat := cur.Round(net.Mul(l.VATRate.Decimal).Div(hundred))
		t.Lines = append(t.Lines, LineAmounts{Net: net, VAT: vat, Gross: net.Add(vat)})
		t.Net, t.VAT = t.Net.Add(net), t.VAT.Add(vat)
		key := l.VATRate.String()
		if byRate[key] == nil {
			byRate[key] = &RateTotal{Rate: l.VATRate.Decimal}
		}
		byRate[key].Net = byRate[key].Net.Add(net)
		byRate[key].VAT = byRate[key].VAT.Add(vat)
	}
	t.Gross = t.Net.Add(t.VAT)
	for _, r := range byRate {
		t.ByRate = append(t.ByRate, *r)
	}
	sort.Slice(t.ByRate, func(i, j int) bool { return t.ByRate[i].Rate.LessThan(t.ByRate[j].Rate) })
	return t
}

// FormatNumber renders a document number: series, issue year and the
// sequence zero-padded to six digits (INV-2026-000001).
func FormatNumber(series string, issue Date, sequence int64) string {
	return fmt.Sprintf("%s-%04d-%06d", series, issue.Year(), sequence)
}

// Invoice is an issued invoice.
type Invoice struct {
	ID             uuid.UUID
	Company        string
	Number         string
	Sequence       int64
	JournalEntryID uuid.UUID
	Currency       Currency
	Totals         Totals
	// Conversion into the company's currency (nil: the document is in it)
	// and the totals it gives.
	Conversion *Conversion
	Converted  Totals
	CreateInvoice
}

// Convert records how the invoice converts into the company's currency.
func (inv *Invoice) Convert(c *Conversion) {
	inv.Conversion = c
	inv.Converted = c.Converted(inv.Totals, lineRates(inv.Lines))
}

func lineRates(lines []InvoiceLine) []decimal.Decimal {
	out := make([]decimal.Decimal, len(lines))
	for i, l := range lines {
		out[i] = l.VATRate.Decimal
	}
	return out
}

// IssueInvoice builds the invoice for cmd with the allocated sequence and
// its journal entry: Dr receivables (gross) / Cr revenue (net) / Cr output
// VAT (VAT). conv converts a document in another currency than the
// company's (nil: none): revenue and VAT at their converted lines' sums,
// the receivable at the sum of those, so a rounding difference of the
// per-line conversion stays on the receivable and the entry balances in
// both currencies.
func IssueInvoice(company string, cmd *CreateInvoice, conv *Conversion, id, entryID uuid.UUID, sequence int64) (*Invoice, *JournalEntry) {
	cur, _ := LookupCurrency(cmd.Currency)
	inv := &Invoice{
		ID:             id,
		Company:        company,
		Number:         FormatNumber(cmd.Series, cmd.IssueDate, sequence),
		Sequence:       sequence,
		JournalEntryID: entryID,
		Currency:       cur,
		Totals:         cmd.Totals(cur),
		CreateInvoice:  *cmd,
	}
	inv.Convert(conv)
	t, co := inv.Totals, inv.Converted
	var lines []JournalLine
	lines = appendNonZero(lines, debit(AccountReceivables, cur.Code, t.Gross).at(co.Gross))
	lines = appendNonZero(lines, credit(AccountRevenue, cur.Code, t.Net).at(co.Net))
	lines = appendNonZero(lines, credit(AccountOutputVAT, cur.Code, t.VAT).at(co.VAT))
	entry := &JournalEntry{
		ID:          entryID,
		Company:     company,
		Date:        cmd.IssueDate,
		Description: "Invoice " + inv.Number,
		SourceType:  "invoice",
		SourceID:    id,
		Lines:       lines,
	}
	return inv, entry
}

// InvoiceView is an invoice as results and events show it: amounts as
// strings with exactly the currency's minor-unit digits.
type InvoiceView struct {
	InvoiceID    string            `json:"invoice_id"`
	Number       string            `json:"number"`
	Series       string            `json:"series"`
	Sequence     int64             `json:"sequence"`
	OrderID      string            `json:"order_id"`
	Customer     Party             `json:"customer"`
	Currency     string            `json:"currency"`
	IssueDate    string            `json:"issue_date"`
	DueDate      string            `json:"due_date"`
	Lines        []InvoiceLineView `json:"lines"`
	VATBreakdown []RateView        `json:"vat_breakdown"`
	Net          string            `json:"net"`
	VAT          string            `json:"vat"`
	Gross        string            `json:"gross"`
	// Exchange is the rate used and the amounts in the company's currency,
	// for an invoice in another currency.
	Exchange       *ConversionView `json:"exchange,omitempty"`
	JournalEntryID string          `json:"journal_entry_id"`
}

// InvoiceLineView is one line of an InvoiceView.
type InvoiceLineView struct {
	Description string `json:"description"`
	Quantity    string `json:"quantity"`
	UnitPrice   string `json:"unit_price"`
	VATRate     string `json:"vat_rate"`
	// VATTreatment is empty for a line posted before lines carried one.
	VATTreatment VATTreatment `json:"vat_treatment,omitempty"`
	Net          string       `json:"net"`
	VAT          string       `json:"vat"`
	Gross        string       `json:"gross"`
}

// RateView is the VAT of one rate.
type RateView struct {
	Rate string `json:"rate"`
	Net  string `json:"net"`
	VAT  string `json:"vat"`
}

// View renders the invoice for results and events.
func (inv *Invoice) View() InvoiceView {
	cur := inv.Currency
	v := InvoiceView{
		InvoiceID:      inv.ID.String(),
		Number:         inv.Number,
		Series:         inv.Series,
		Sequence:       inv.Sequence,
		OrderID:        inv.OrderID,
		Customer:       inv.Customer,
		Currency:       cur.Code,
		IssueDate:      inv.IssueDate.String(),
		DueDate:        inv.DueDate.String(),
		Net:            cur.Format(inv.Totals.Net),
		VAT:            cur.Format(inv.Totals.VAT),
		Gross:          cur.Format(inv.Totals.Gross),
		Exchange:       inv.Conversion.View(inv.Converted),
		JournalEntryID: inv.JournalEntryID.String(),
	}
	for i, l := range inv.Lines {
		a := inv.Totals.Lines[i]
		v.Lines = append(v.Lines, InvoiceLineView{
			Description:  l.Description,
			Quantity:     l.Quantity.String(),
			UnitPrice:    cur.Price(l.UnitPrice.Decimal),
			VATRate:      l.VATRate.String(),
			VATTreatment: l.VATTreatment,
			Net:          cur.Format(a.Net),
			VAT:          cur.Format(a.VAT),
			Gross:        cur.Format(a.Gross),
		})
	}
	for _, r := range inv.Totals.ByRate {
		v.VATBreakdown = append(v.VATBreakdown, RateView{Rate: r.Rate.String(), Net: cur.Format(r.Net), VAT: cur.Format(r.VAT)})
	}
	return v
}
