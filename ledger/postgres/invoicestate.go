package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

// invoiceRef names an invoice by ID or by number.
type invoiceRef struct{ id, number string }

func (r invoiceRef) String() string {
	if r.id != "" {
		return r.id
	}
	return r.number
}

// lockInvoices loads invoices with what was credited and paid on them, and
// locks them (in ID order, so concurrent commands cannot deadlock) until tx
// ends: credits and payments of one invoice are checked one at a time, and
// never take more than is left.
func lockInvoices(ctx context.Context, tx pgx.Tx, company string, refs []invoiceRef) ([]*ledger.InvoiceState, error) {
	var ids []uuid.UUID
	var numbers []string
	for _, r := range refs {
		if r.id != "" {
			ids = append(ids, uuid.MustParse(r.id))
		} else {
			numbers = append(numbers, r.number)
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT id, number, customer_id, currency, issue_date, gross::text FROM invoices
		 WHERE company_id = $1 AND (id = ANY($2) OR number = ANY($3))
		 ORDER BY id
		   FOR UPDATE`, company, ids, numbers)
	if err != nil {
		return nil, fmt.Errorf("lock invoices: %w", err)
	}
	byID := map[uuid.UUID]*ledger.InvoiceState{}
	byNumber := map[string]*ledger.InvoiceState{}
	for rows.Next() {
		st := &ledger.InvoiceState{CreditedByRate: map[string]ledger.RateTotal{}}
		var cur, gross string
		if err := rows.Scan(&st.ID, &st.Number, &st.CustomerID, &cur, &st.IssueDate.Time, &gross); err != nil {
			return nil, fmt.Errorf("read invoice: %w", err)
		}
		st.Currency, _ = ledger.LookupCurrency(cur)
		st.Gross = dec(gross)
		byID[st.ID], byNumber[st.Number] = st, st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lock invoices: %w", err)
	}
	out := make([]*ledger.InvoiceState, len(refs))
	for i, r := range refs {
		st := byNumber[r.number]
		if r.id != "" {
			st = byID[uuid.MustParse(r.id)]
		}
		if st == nil {
			e := ledger.Errorf(ledger.CodeNotFound, "invoice %s does not exist for company %q", r, company)
			e.Details = map[string]any{"invoice": r.String()}
			return nil, e
		}
		if err := loadInvoiceHistory(ctx, tx, st); err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

// loadInvoiceHistory fills in an invoice's lines, its credits and payments.
func loadInvoiceHistory(ctx context.Context, tx pgx.Tx, st *ledger.InvoiceState) error {
	if len(st.Lines) > 0 {
		return nil // the same invoice listed twice
	}
	batch := &pgx.Batch{}
	batch.Queue(`
		SELECT line_no, description, quantity::text, unit_price::text, vat_rate::text, net::text, vat::text
		  FROM invoice_lines WHERE invoice_id = $1 ORDER BY line_no`, st.ID)
	batch.Queue(`
		SELECT coalesce(l.invoice_line_no, 0), l.vat_rate::text, coalesce(sum(l.quantity), 0)::text, sum(l.net)::text, sum(l.vat)::text
		  FROM credit_note_lines l JOIN credit_notes c ON c.id = l.credit_note_id
		 WHERE c.invoice_id = $1
		 GROUP BY 1, 2`, st.ID)
	batch.Queue(`SELECT coalesce(sum(amount), 0)::text FROM payment_allocations WHERE invoice_id = $1`, st.ID)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()

	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("invoice lines: %w", err)
	}
	for rows.Next() {
		var l ledger.IssuedLine
		var q, p, r, n, v string
		if err := rows.Scan(&l.No, &l.Description, &q, &p, &r, &n, &v); err != nil {
			return fmt.Errorf("invoice line: %w", err)
		}
		l.Quantity, l.UnitPrice, l.VATRate, l.Net, l.VAT = dec(q), dec(p), dec(r), dec(n), dec(v)
		st.Lines = append(st.Lines, l)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("invoice lines: %w", err)
	}

	rows, err = br.Query()
	if err != nil {
		return fmt.Errorf("credits: %w", err)
	}
	for rows.Next() {
		var line int
		var r, q, n, v string
		if err := rows.Scan(&line, &r, &q, &n, &v); err != nil {
			return fmt.Errorf("credit: %w", err)
		}
		rate, net, vat := dec(r), dec(n), dec(v)
		t := st.CreditedByRate[rate.String()]
		t.Rate, t.Net, t.VAT = rate, t.Net.Add(net), t.VAT.Add(vat)
		st.CreditedByRate[rate.String()] = t
		st.CreditedGross = st.CreditedGross.Add(net).Add(vat)
		if line > 0 && line <= len(st.Lines) {
			il := &st.Lines[line-1]
			il.CreditedQuantity = il.CreditedQuantity.Add(dec(q))
			il.CreditedNet, il.CreditedVAT = il.CreditedNet.Add(net), il.CreditedVAT.Add(vat)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("credits: %w", err)
	}

	var paid string
	if err := br.QueryRow().Scan(&paid); err != nil {
		return fmt.Errorf("payments: %w", err)
	}
	st.Paid = dec(paid)
	return br.Close()
}

// dec parses a numeric column read as text. Postgres renders numeric as a
// plain decimal, so a failure is a bug, not bad input: it panics, and the
// consumer's recoverer turns that into a retried, then dead-lettered, message.
func dec(s string) decimal.Decimal {
	d, err := decimal.NewFromString(s)
	if err != nil {
		panic(fmt.Sprintf("numeric %q from the database does not parse: %v", s, err))
	}
	return d
}

// existing reports a business duplicate found by query (one row of id and
// a label), or nil when there is none.
func existing(ctx context.Context, tx pgx.Tx, doc, message string, query string, args ...any) error {
	var id uuid.UUID
	var label string
	err := tx.QueryRow(ctx, query, args...).Scan(&id, &label)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up existing %s: %w", doc, err)
	}
	e := ledger.Errorf(ledger.CodeDuplicateDocument, "%s (%s %s)", message, doc, label)
	e.Details = map[string]any{"document": doc, doc + "_id": id.String(), "existing": label}
	return e
}
