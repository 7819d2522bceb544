package ledger

import (
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// MaxInvoicePage is the most invoices one page of a listing holds.
const MaxInvoicePage = 500

// InvoiceSummary is an invoice as a listing shows it: its identity, its
// customer, its totals and where it stands, without lines, credit notes
// or payments (read the invoice for those).
type InvoiceSummary struct {
	ID                 uuid.UUID
	Number, Series     string
	Sequence           int64
	OrderID            string
	Customer           Party
	Currency           Currency
	IssueDate, DueDate Date
	Net, VAT, Gross    decimal.Decimal
	// Credited, Paid and ToCustomerCredit are what InvoiceDetail sums
	// from the credit notes, payments and customer credit.
	Credited, Paid, ToCustomerCredit decimal.Decimal
}

// Open is what the customer still owes, as InvoiceDetail.Open.
func (s InvoiceSummary) Open() decimal.Decimal {
	return s.Gross.Sub(s.Credited).Sub(s.Paid).Add(s.ToCustomerCredit)
}

// Status is open, partially_paid, paid or credited, as InvoiceDetail.Status.
func (s InvoiceSummary) Status() string {
	return InvoiceStatus(s.Gross, s.Credited, s.Paid.Sub(s.ToCustomerCredit))
}

// InvoicePage is one page of a listing, oldest issue date first. Next is
// the cursor of the page after it, empty on the last page.
type InvoicePage struct {
	Invoices []InvoiceSummary
	Next     string
}

// InvoiceSummaryView is an InvoiceSummary as the API shows it.
type InvoiceSummaryView struct {
	InvoiceID string `json:"invoice_id"`
	Number    string `json:"number"`
	Series    string `json:"series"`
	Sequence  int64  `json:"sequence"`
	OrderID   string `json:"order_id"`
	Customer  Party  `json:"customer"`
	Currency  string `json:"currency"`
	IssueDate string `json:"issue_date"`
	DueDate   string `json:"due_date"`
	Net       string `json:"net"`
	VAT       string `json:"vat"`
	Gross     string `json:"gross"`
	Status    string `json:"status"`
	Open      string `json:"open"`
}

// InvoicePageView is an InvoicePage as the API shows it: next is null on
// the last page, so a client loops while it is not.
type InvoicePageView struct {
	Data []InvoiceSummaryView `json:"data"`
	Next *string              `json:"next"`
}

func (p *InvoicePage) View() InvoicePageView {
	v := InvoicePageView{Data: make([]InvoiceSummaryView, 0, len(p.Invoices))}
	for _, s := range p.Invoices {
		cur := s.Currency
		v.Data = append(v.Data, InvoiceSummaryView{
			InvoiceID: s.ID.String(), Number: s.Number, Series: s.Series, Sequence: s.Sequence,
			OrderID: s.OrderID, Customer: s.Customer, Currency: cur.Code,
			IssueDate: s.IssueDate.String(), DueDate: s.DueDate.String(),
			Net: cur.Format(s.Net), VAT: cur.Format(s.VAT), Gross: cur.Format(s.Gross),
			Status: s.Status(), Open: cur.Format(s.Open()),
		})
	}
	if p.Next != "" {
		v.Next = &p.Next
	}
	return v
}
