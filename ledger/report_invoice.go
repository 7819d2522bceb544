package ledger

import (
	"sort"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// TotalsFromLines rebuilds a document's totals from its stored line amounts;
// rates[i] is the VAT rate of lines[i]. Stored amounts are authoritative: a
// report shows what was issued, not a recomputation.
func TotalsFromLines(lines []LineAmounts, rates []decimal.Decimal) Totals {
	t := Totals{Lines: lines}
	byRate := map[string]*RateTotal{}
	for i, l := range lines {
		t.Net, t.VAT, t.Gross = t.Net.Add(l.Net), t.VAT.Add(l.VAT), t.Gross.Add(l.Gross)
		k := rates[i].String()
		if byRate[k] == nil {
			byRate[k] = &RateTotal{Rate: rates[i]}
		}
		byRate[k].Net = byRate[k].Net.Add(l.Net)
		byRate[k].VAT = byRate[k].VAT.Add(l.VAT)
	}
	for _, r := range byRate {
		t.ByRate = append(t.ByRate, *r)
	}
	sort.Slice(t.ByRate, func(i, j int) bool { return t.ByRate[i].Rate.LessThan(t.ByRate[j].Rate) })
	return t
}

// InvoiceDetail is an issued invoice with the credit notes and payments
// against it, and where it stands now.
type InvoiceDetail struct {
	Invoice     *Invoice
	CreditNotes []InvoiceCredit
	// Payments are the payments' allocations and the customer's credit
	// applied to the invoice (Method MethodCustomerCredit).
	Payments []InvoicePayment
	// ToCustomerCredit is what credit notes took beyond what was open:
	// it went to the customer's credit, out of what was paid.
	ToCustomerCredit decimal.Decimal
}

// MethodCustomerCredit is the method of an InvoicePayment that is the
// customer's credit applied to the invoice (customer_credit.apply).
const MethodCustomerCredit = "customer_credit"

// InvoiceCredit is a credit note of the invoice.
type InvoiceCredit struct {
	ID        uuid.UUID
	Number    string
	IssueDate Date
	Reason    string
	Net, VAT  decimal.Decimal
}

// Gross is net plus VAT.
func (c InvoiceCredit) Gross() decimal.Decimal { return c.Net.Add(c.VAT) }

// InvoicePayment is the part of a payment allocated to the invoice.
type InvoicePayment struct {
	PaymentID  uuid.UUID
	PaymentRef string
	ReceivedOn Date
	Method     string
	Amount     decimal.Decimal
}

// Credited sums the gross of the credit notes.
func (d *InvoiceDetail) Credited() decimal.Decimal {
	var s decimal.Decimal
	for _, c := range d.CreditNotes {
		s = s.Add(c.Gross())
	}
	return s
}

// Paid sums the payments allocated to the invoice.
func (d *InvoiceDetail) Paid() decimal.Decimal {
	var s decimal.Decimal
	for _, p := range d.Payments {
		s = s.Add(p.Amount)
	}
	return s
}

// Open is what the customer still owes.
func (d *InvoiceDetail) Open() decimal.Decimal {
	return d.Invoice.Totals.Gross.Sub(d.Credited()).Sub(d.Paid()).Add(d.ToCustomerCredit)
}

// Status is open, partially_paid, paid or credited.
func (d *InvoiceDetail) Status() string {
	return InvoiceStatus(d.Invoice.Totals.Gross, d.Credited(), d.Paid().Sub(d.ToCustomerCredit))
}

// InvoiceDetailView is an invoice detail as reports show it.
type InvoiceDetailView struct {
	Invoice  InvoiceView `json:"invoice"`
	Status   string      `json:"status"`
	Credited string      `json:"credited"`
	Paid     string      `json:"paid"`
	// ToCustomerCredit: see InvoiceDetail.ToCustomerCredit.
	ToCustomerCredit string               `json:"to_customer_credit"`
	Open             string               `json:"open"`
	CreditNotes      []InvoiceCreditView  `json:"credit_notes"`
	Payments         []InvoicePaymentView `json:"payments"`
}

// InvoiceCreditView is one credit note of the invoice.
type InvoiceCreditView struct {
	CreditNoteID string `json:"credit_note_id"`
	Number       string `json:"number"`
	IssueDate    string `json:"issue_date"`
	Reason       string `json:"reason"`
	Net          string `json:"net"`
	VAT          string `json:"vat"`
	Gross        string `json:"gross"`
}

// InvoicePaymentView is one payment allocated to the invoice.
type InvoicePaymentView struct {
	PaymentID  string `json:"payment_id"`
	PaymentRef string `json:"payment_ref"`
	ReceivedOn string `json:"received_on"`
	Method     string `json:"method"`
	Amount     string `json:"amount"`
}

// View renders the invoice detail.
func (d *InvoiceDetail) View() InvoiceDetailView {
	c := d.Invoice.Currency
	v := InvoiceDetailView{
		Invoice: d.Invoice.View(), Status: d.Status(),
		Credited: c.Format(d.Credited()), Paid: c.Format(d.Paid()), Open: c.Format(d.Open()),
		ToCustomerCredit: c.Format(d.ToCustomerCredit),
		CreditNotes:      []InvoiceCreditView{}, Payments: []InvoicePaymentView{},
	}
	for _, cn := range d.CreditNotes {
		v.CreditNotes = append(v.CreditNotes, InvoiceCreditView{
			CreditNoteID: cn.ID.String(), Number: cn.Number, IssueDate: cn.IssueDate.String(), Reason: cn.Reason,
			Net: c.Format(cn.Net), VAT: c.Format(cn.VAT), Gross: c.Format(cn.Gross()),
		})
	}
	for _, p := range d.Payments {
		v.Payments = append(v.Payments, InvoicePaymentView{
			PaymentID: p.PaymentID.String(), PaymentRef: p.PaymentRef, ReceivedOn: p.ReceivedOn.String(),
			Method: p.Method, Amount: c.Format(p.Amount),
		})
	}
	return v
}
