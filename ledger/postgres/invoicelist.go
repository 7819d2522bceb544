package postgres

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

// ErrBadCursor is returned for a cursor that no listing returned.
var ErrBadCursor = errors.New("not a cursor of this listing")

// InvoiceFilter selects the invoices ListInvoices returns.
type InvoiceFilter struct {
	// Limit is the most invoices of the page: 1 to ledger.MaxInvoicePage.
	// Defaults to 50.
	Limit int
	// After is the Next of the previous page; empty for the first.
	After string
	// CustomerID, when set, keeps only that customer's invoices.
	CustomerID string
	// From and To, when set, bound the issue date, both included.
	From, To ledger.Date
}

// ListInvoices returns a page of the company's invoices in issue date
// order, then by number: the order of the index invoices_listing, so a
// page reads its own rows and the next page starts where this one ended,
// however many pages came before, and invoices issued meanwhile never
// shift a page. An After that no page returned is ErrBadCursor.
func ListInvoices(ctx context.Context, q Querier, company string, f InvoiceFilter) (*ledger.InvoicePage, error) {
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 1 || f.Limit > ledger.MaxInvoicePage {
		return nil, fmt.Errorf("list invoices: limit %d is not between 1 and %d", f.Limit, ledger.MaxInvoicePage)
	}
	if _, err := loadCompany(ctx, q, company); err != nil {
		return nil, err
	}
	where, args := []string{"company_id = $1"}, []any{company}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.After != "" {
		day, number, ok := parseCursor(f.After)
		if !ok {
			return nil, ErrBadCursor
		}
		where = append(where, fmt.Sprintf("(issue_date, number) > (%s::date, %s::text)", arg(day.Time), arg(number)))
	}
	if f.CustomerID != "" {
		where = append(where, "customer_id = "+arg(f.CustomerID))
	}
	if !f.From.IsZero() {
		where = append(where, "issue_date >= "+arg(f.From.Time))
	}
	if !f.To.IsZero() {
		where = append(where, "issue_date <= "+arg(f.To.Time))
	}
	// Where each invoice stands is summed as Invoice sums it, from its
	// credit notes, payments and customer credit, each by its index on
	// invoice_id, for the page's rows only.
	rows, err := q.Query(ctx, `
		SELECT i.id, i.number, i.series, i.sequence, i.order_id, i.customer_id, i.customer_name, i.customer_vat_id,
		       i.customer_country, i.currency, i.issue_date, i.due_date, i.net::text, i.vat::text, i.gross::text,
		       (SELECT coalesce(sum(c.net + c.vat), 0) FROM credit_notes c WHERE c.invoice_id = i.id)::text,
		       (SELECT coalesce(sum(a.amount), 0) FROM payment_allocations a WHERE a.invoice_id = i.id)::text,
		       m.applied::text, m.to_credit::text
		  FROM (SELECT * FROM invoices WHERE `+strings.Join(where, " AND ")+`
		         ORDER BY issue_date, number LIMIT `+arg(f.Limit+1)+`) i
		 CROSS JOIN LATERAL (
		       SELECT coalesce(sum(-amount) FILTER (WHERE kind = 'application'), 0) AS applied,
		              coalesce(sum(amount) FILTER (WHERE kind = 'credit_note'), 0) AS to_credit
		         FROM customer_credit_movements WHERE invoice_id = i.id) m
		 ORDER BY i.issue_date, i.number`, args...)
	if err != nil {
		return nil, fmt.Errorf("list invoices: %w", err)
	}
	defer rows.Close()
	page := &ledger.InvoicePage{}
	for rows.Next() {
		var s ledger.InvoiceSummary
		var cur string
		var issue, due time.Time
		var paid, applied decimal.Decimal
		if err := rows.Scan(&s.ID, &s.Number, &s.Series, &s.Sequence, &s.OrderID, &s.Customer.ID, &s.Customer.Name,
			&s.Customer.VATID, &s.Customer.Country, &cur, &issue, &due, &s.Net, &s.VAT, &s.Gross,
			&s.Credited, &paid, &applied, &s.ToCustomerCredit); err != nil {
			return nil, fmt.Errorf("list invoices: %w", err)
		}
		s.Currency, s.IssueDate, s.DueDate = currencyOf(cur), civilDate(issue), civilDate(due)
		s.Paid = paid.Add(applied)
		page.Invoices = append(page.Invoices, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list invoices: %w", err)
	}
	// One row more than the page says whether there is a next page without
	// a count.
	if len(page.Invoices) > f.Limit {
		page.Invoices = page.Invoices[:f.Limit]
		last := page.Invoices[f.Limit-1]
		page.Next = formatCursor(last.IssueDate, last.Number)
	}
	return page, nil
}

// A cursor is the order key of the last invoice of a page, encoded so
// that clients treat it as opaque and the key can change without them.
func formatCursor(day ledger.Date, number string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(day.String() + "|" + number))
}

func parseCursor(c string) (ledger.Date, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return ledger.Date{}, "", false
	}
	d, number, ok := strings.Cut(string(b), "|")
	day, err := ledger.ParseDate(d)
	if !ok || err != nil || number == "" {
		return ledger.Date{}, "", false
	}
	return day, number, true
}
