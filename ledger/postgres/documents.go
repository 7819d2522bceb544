package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
)

func (s *Store) createCreditNote(ctx context.Context, tx pgx.Tx, company string, c *ledger.CreateCreditNote) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	invs, err := lockInvoices(ctx, tx, company, []invoiceRef{{c.InvoiceID, c.InvoiceNumber}})
	if err != nil {
		return ledger.Outcome{}, err
	}
	inv := invs[0]
	if c.IssueDate.Before(inv.IssueDate.Time) {
		e := ledger.Errorf(ledger.CodeConflict, "credit note dated %s precedes invoice %s of %s", c.IssueDate, inv.Number, inv.IssueDate)
		e.Details = map[string]any{"invoice_id": inv.ID.String(), "number": inv.Number}
		return ledger.Outcome{}, e
	}
	lines, perr := ledger.PlanCredit(inv, c)
	if perr != nil {
		return ledger.Outcome{}, perr
	}
	seq, err := nextNumber(ctx, tx, company, c.Series)
	if err != nil {
		return ledger.Outcome{}, err
	}
	cn, entry := ledger.IssueCreditNote(company, c, inv, lines, newID(), newID(), seq)
	err = postDocument(ctx, tx, entry, "", nil, func(b *pgx.Batch) {
		b.Queue(`
			INSERT INTO credit_notes (id, company_id, series, sequence, number, invoice_id, issue_date, reason,
				currency, net, vat, gross, journal_entry_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			cn.ID, company, cn.Series, cn.Sequence, cn.Number, inv.ID, cn.IssueDate.Time, cn.Reason,
			inv.Currency.Code, cn.Net.String(), cn.VAT.String(), cn.Gross().String(), entry.ID)
		for i, l := range cn.Lines {
			var invLine *int
			if l.InvoiceLine > 0 {
				invLine = &l.InvoiceLine
			}
			var qty, price *string
			if l.Quantity.Valid {
				q, p := l.Quantity.Decimal.String(), l.UnitPrice.Decimal.String()
				qty, price = &q, &p
			}
			b.Queue(`
				INSERT INTO credit_note_lines (credit_note_id, line_no, invoice_line_no, description, quantity, unit_price, vat_rate, net, vat, gross)
				VALUES ($1, $2, $3, $4, $5::numeric, $6::numeric, $7, $8, $9, $10)`,
				cn.ID, i+1, invLine, l.Description, qty, price, l.VATRate.String(),
				l.Net.String(), l.VAT.String(), l.Net.Add(l.VAT).String())
		}
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("post credit note %s: %w", cn.Number, err)
	}
	return outcome("credit_note.created", cn.View()), nil
}

func (s *Store) recordPayment(ctx context.Context, tx pgx.Tx, company string, c *ledger.RecordPayment) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	dup := func(ctx context.Context, tx pgx.Tx) error {
		return existing(ctx, tx, "payment", fmt.Sprintf("payment %q is already recorded", c.PaymentRef),
			`SELECT id, payment_ref FROM payments WHERE company_id = $1 AND payment_ref = $2`, company, c.PaymentRef)
	}
	if err := dup(ctx, tx); err != nil {
		return ledger.Outcome{}, err
	}
	refs := make([]invoiceRef, len(c.Allocations))
	for i, a := range c.Allocations {
		refs[i] = invoiceRef{a.InvoiceID, a.InvoiceNumber}
	}
	invs, err := lockInvoices(ctx, tx, company, refs)
	if err != nil {
		return ledger.Outcome{}, err
	}
	// The same invoice named once by ID and once by number.
	seen := map[string]bool{}
	for _, inv := range invs {
		if seen[inv.Number] {
			return ledger.Outcome{}, ledger.Errorf(ledger.CodeInvalidCommand, "allocations: invoice %s is listed twice", inv.Number)
		}
		seen[inv.Number] = true
	}
	p, entry, perr := ledger.ApplyPayment(company, c, invs, newID(), newID())
	if perr != nil {
		return ledger.Outcome{}, perr
	}
	err = postDocument(ctx, tx, entry, "payments_one_per_ref", dup, func(b *pgx.Batch) {
		b.Queue(`
			INSERT INTO payments (id, company_id, payment_ref, customer_id, received_on, method, currency, amount, unapplied, journal_entry_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			p.ID, company, c.PaymentRef, c.CustomerID, c.ReceivedOn.Time, c.Method, p.Currency.Code,
			c.Amount.String(), p.Unapplied.String(), entry.ID)
		for _, a := range p.Applied {
			b.Queue(`INSERT INTO payment_allocations (payment_id, invoice_id, amount) VALUES ($1, $2, $3)`,
				p.ID, a.Invoice.ID, a.Amount.String())
		}
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("post payment %s: %w", c.PaymentRef, err)
	}
	return outcome("payment.recorded", p.View()), nil
}

func (s *Store) recordSettlement(ctx context.Context, tx pgx.Tx, company string, c *ledger.RecordSettlement) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	dup := func(ctx context.Context, tx pgx.Tx) error {
		return existing(ctx, tx, "settlement", fmt.Sprintf("payout %q of %s is already recorded", c.PayoutID, c.Provider),
			`SELECT id, provider || ' ' || payout_id FROM settlements WHERE company_id = $1 AND provider = $2 AND payout_id = $3`,
			company, c.Provider, c.PayoutID)
	}
	if err := dup(ctx, tx); err != nil {
		return ledger.Outcome{}, err
	}
	st, entry := ledger.SettleProvider(company, c, newID(), newID())
	err := postDocument(ctx, tx, entry, "settlements_one_per_payout", dup, func(b *pgx.Batch) {
		b.Queue(`
			INSERT INTO settlements (id, company_id, provider, payout_id, payout_date, currency, gross, fees, refunds, net, journal_entry_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			st.ID, company, c.Provider, c.PayoutID, c.PayoutDate.Time, st.Currency.Code,
			c.Gross.String(), c.Fees.String(), c.Refunds.String(), c.Net.String(), entry.ID)
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("post settlement %s: %w", c.PayoutID, err)
	}
	return outcome("settlement.recorded", st.View()), nil
}

func (s *Store) recordPurchase(ctx context.Context, tx pgx.Tx, company string, c *ledger.RecordPurchaseInvoice) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	dup := func(ctx context.Context, tx pgx.Tx) error {
		return existing(ctx, tx, "purchase_invoice",
			fmt.Sprintf("supplier %q's invoice %q is already recorded", c.Supplier.ID, c.DocumentNumber),
			`SELECT id, document_number FROM purchase_invoices WHERE company_id = $1 AND supplier_id = $2 AND document_number = $3`,
			company, c.Supplier.ID, c.DocumentNumber)
	}
	if err := dup(ctx, tx); err != nil {
		return ledger.Outcome{}, err
	}
	pi, entry := ledger.BookPurchase(company, c, newID(), newID())
	err := postDocument(ctx, tx, entry, "purchase_invoices_one_per_document", dup, func(b *pgx.Batch) {
		b.Queue(`
			INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
				document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			pi.ID, company, c.Supplier.ID, c.Supplier.Name, c.Supplier.VATID, c.Supplier.Country,
			c.DocumentNumber, c.IssueDate.Time, c.DueDate.Time, pi.Currency.Code,
			pi.Totals.Net.String(), pi.Totals.VAT.String(), pi.Totals.Gross.String(), entry.ID)
		for i, l := range c.Lines {
			a := pi.Totals.Lines[i]
			b.Queue(`
				INSERT INTO purchase_invoice_lines (purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				pi.ID, i+1, l.Description, l.Quantity.String(), l.UnitPrice.String(), l.VATRate.String(), l.Account,
				a.Net.String(), a.VAT.String(), a.Gross.String())
		}
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("post purchase invoice %s: %w", c.DocumentNumber, err)
	}
	return outcome("purchase_invoice.recorded", pi.View()), nil
}

func (s *Store) registerAsset(ctx context.Context, tx pgx.Tx, company string, c *ledger.RegisterAsset) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	dup := func(ctx context.Context, tx pgx.Tx) error {
		return existing(ctx, tx, "asset", fmt.Sprintf("asset %q is already registered", c.AssetID),
			`SELECT id, asset_ref FROM assets WHERE company_id = $1 AND asset_ref = $2`, company, c.AssetID)
	}
	if err := dup(ctx, tx); err != nil {
		return ledger.Outcome{}, err
	}
	cur, _ := ledger.LookupCurrency(c.Currency)
	a := &ledger.Asset{
		ID: newID(), Ref: c.AssetID, Description: c.Description, AcquisitionDate: c.AcquisitionDate,
		Currency: cur, Cost: c.Cost.Decimal, ResidualValue: c.ResidualValue.Decimal, UsefulLifeMonths: c.UsefulLifeMonths,
	}
	err := postDocument(ctx, tx, nil, "assets_one_per_ref", dup, func(b *pgx.Batch) {
		b.Queue(`
			INSERT INTO assets (id, company_id, asset_ref, description, acquisition_date, currency, cost, residual_value, useful_life_months)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			a.ID, company, a.Ref, a.Description, a.AcquisitionDate.Time, cur.Code,
			a.Cost.String(), a.ResidualValue.String(), a.UsefulLifeMonths)
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("register asset %s: %w", c.AssetID, err)
	}
	return outcome("asset.registered", a.View()), nil
}

func (s *Store) runDepreciation(ctx context.Context, tx pgx.Tx, company string, c *ledger.RunDepreciation) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	period, _ := ledger.ParsePeriod(c.Period)
	a := &ledger.Asset{Ref: c.AssetID}
	var cur, cost, residual string
	err := tx.QueryRow(ctx, `
		SELECT id, description, acquisition_date, currency, cost::text, residual_value::text, useful_life_months
		  FROM assets WHERE company_id = $1 AND asset_ref = $2`, company, c.AssetID).
		Scan(&a.ID, &a.Description, &a.AcquisitionDate.Time, &cur, &cost, &residual, &a.UsefulLifeMonths)
	if errors.Is(err, pgx.ErrNoRows) {
		e := ledger.Errorf(ledger.CodeNotFound, "asset %q is not registered for company %q", c.AssetID, company)
		e.Details = map[string]any{"asset_id": c.AssetID}
		return ledger.Outcome{}, e
	}
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("look up asset: %w", err)
	}
	a.Currency, _ = ledger.LookupCurrency(cur)
	a.Cost, a.ResidualValue = dec(cost), dec(residual)
	dup := func(ctx context.Context, tx pgx.Tx) error {
		return existing(ctx, tx, "depreciation_run",
			fmt.Sprintf("asset %q is already depreciated for %s", c.AssetID, period),
			`SELECT id, to_char(period, 'YYYY-MM') FROM depreciation_runs WHERE asset_id = $1 AND period = $2`,
			a.ID, period.First().Time)
	}
	if err := dup(ctx, tx); err != nil {
		return ledger.Outcome{}, err
	}
	run, entry, derr := ledger.Depreciate(company, a, period, newID(), newID())
	if derr != nil {
		return ledger.Outcome{}, derr
	}
	err = postDocument(ctx, tx, entry, "depreciation_one_per_period", dup, func(b *pgx.Batch) {
		b.Queue(`
			INSERT INTO depreciation_runs (id, company_id, asset_id, period, amount, journal_entry_id)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			run.ID, company, a.ID, period.First().Time, run.Amount.String(), entry.ID)
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("post depreciation of %s for %s: %w", c.AssetID, period, err)
	}
	return outcome("depreciation.posted", run.View()), nil
}
