package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
)

// Querier is what the reports read through: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all qualify. A report runs several queries; give it a REPEATABLE
// READ (read-only) transaction for one consistent snapshot of the books.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Amounts are read as text and parsed into decimal.Decimal (its sql.Scanner):
// the pool registers no decimal type, and text keeps every digit.

// loadCompany returns the company or unknown_company.
func loadCompany(ctx context.Context, q Querier, id string) (ledger.Company, error) {
	c := ledger.Company{ID: id}
	err := q.QueryRow(ctx, `SELECT name, country, currency, vat_id, registration_number FROM companies WHERE id = $1`, id).
		Scan(&c.Name, &c.Country, &c.Currency, &c.VATID, &c.RegistrationNumber)
	if errors.Is(err, pgx.ErrNoRows) {
		e := ledger.Errorf(ledger.CodeUnknownCompany, "company %q does not exist", id)
		e.Details = map[string]any{"company": id}
		return c, e
	}
	if err != nil {
		return c, fmt.Errorf("look up company: %w", err)
	}
	return c, nil
}

// currencyOf returns the currency of a stored code. Every stored code was
// validated when posted; an unknown one is shown with all the digits the
// numeric columns hold rather than rounded.
func currencyOf(code string) ledger.Currency {
	if c, ok := ledger.LookupCurrency(code); ok {
		return c
	}
	return ledger.Currency{Code: code, Minor: 8}
}

// dateArg passes a zero date as NULL: an open end of a range.
func dateArg(d ledger.Date) any {
	if d.IsZero() {
		return nil
	}
	return d.Time
}

func civilDate(t time.Time) ledger.Date {
	return ledger.Date{Time: time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)}
}

// TrialBalance sums every account's journal lines, for entries dated up
// to and including asOf (everything when asOf is zero): in the company's
// currency, the books as they are filed, or per document currency (the
// lines' own amounts, each currency apart).
func TrialBalance(ctx context.Context, q Querier, company string, asOf ledger.Date, basis ledger.Basis) (*ledger.TrialBalance, error) {
	c, err := loadCompany(ctx, q, company)
	if err != nil {
		return nil, err
	}
	// A line without company amounts counts its own (see migration 00020).
	sums, args := `l.currency::text, sum(l.debit)::text, sum(l.credit)::text`, []any{company, dateArg(asOf)}
	if basis == ledger.InCompanyCurrency {
		sums = `$3::text, sum(coalesce(l.debit_company, l.debit))::text, sum(coalesce(l.credit_company, l.credit))::text`
		args = append(args, c.Currency)
	}
	rows, err := q.Query(ctx, `
		SELECT a.code, a.name, a.type, `+sums+`
		  FROM journal_lines l
		  JOIN journal_entries e ON e.id = l.entry_id
		  JOIN accounts a ON a.company_id = l.company_id AND a.code = l.account_code
		 WHERE l.company_id = $1 AND e.company_id = $1
		   AND ($2::date IS NULL OR e.entry_date <= $2::date)
		 GROUP BY 1, 2, 3, 4
		 ORDER BY 1, 4`, args...)
	if err != nil {
		return nil, fmt.Errorf("trial balance: %w", err)
	}
	var out []ledger.TrialBalanceRow
	for rows.Next() {
		var r ledger.TrialBalanceRow
		var typ, cur string
		if err := rows.Scan(&r.Account.Code, &r.Account.Name, &typ, &cur, &r.Debits, &r.Credits); err != nil {
			rows.Close()
			return nil, fmt.Errorf("trial balance: %w", err)
		}
		r.Account.Type, r.Currency = ledger.AccountType(typ), currencyOf(cur)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("trial balance: %w", err)
	}
	tb := ledger.NewTrialBalance(company, asOf, out)
	tb.Basis = basis
	return tb, nil
}

// AccountLedger lists the journal lines on one account dated from..to
// (either may be zero: unbounded), in posting order, with the balance
// brought forward from before from.
func AccountLedger(ctx context.Context, q Querier, company, account string, from, to ledger.Date) (*ledger.AccountLedger, error) {
	if _, err := loadCompany(ctx, q, company); err != nil {
		return nil, err
	}
	var acc ledger.Account
	var typ string
	err := q.QueryRow(ctx, `SELECT code, name, type FROM accounts WHERE company_id = $1 AND code = $2`, company, account).
		Scan(&acc.Code, &acc.Name, &typ)
	if errors.Is(err, pgx.ErrNoRows) {
		e := ledger.Errorf(ledger.CodeNotFound, "company %q has no account %q", company, account)
		e.Details = map[string]any{"account": account}
		return nil, e
	}
	if err != nil {
		return nil, fmt.Errorf("look up account: %w", err)
	}
	acc.Type = ledger.AccountType(typ)

	var opening []ledger.CurrencyAmount
	if !from.IsZero() {
		rows, err := q.Query(ctx, `
			SELECT l.currency, (sum(l.debit) - sum(l.credit))::text
			  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
			 WHERE l.company_id = $1 AND e.company_id = $1 AND l.account_code = $2 AND e.entry_date < $3
			 GROUP BY l.currency`, company, account, from.Time)
		if err != nil {
			return nil, fmt.Errorf("opening balance: %w", err)
		}
		for rows.Next() {
			var cur string
			var amount decimal.Decimal
			if err := rows.Scan(&cur, &amount); err != nil {
				rows.Close()
				return nil, fmt.Errorf("opening balance: %w", err)
			}
			opening = append(opening, ledger.CurrencyAmount{Currency: currencyOf(cur), Amount: amount})
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("opening balance: %w", err)
		}
	}

	// Entries of one day in commit order: created_at is the transaction's
	// start, and the UUIDv7 ids order entries of one transaction.
	rows, err := q.Query(ctx, `
		SELECT e.entry_date, e.id, e.description, e.source_type, e.source_id, l.currency, l.debit::text, l.credit::text
		  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
		 WHERE l.company_id = $1 AND e.company_id = $1 AND l.account_code = $2
		   AND ($3::date IS NULL OR e.entry_date >= $3::date)
		   AND ($4::date IS NULL OR e.entry_date <= $4::date)
		 ORDER BY e.entry_date, e.created_at, e.id, l.line_no`, company, account, dateArg(from), dateArg(to))
	if err != nil {
		return nil, fmt.Errorf("account ledger: %w", err)
	}
	var lines []ledger.LedgerLine
	for rows.Next() {
		var l ledger.LedgerLine
		var day time.Time
		var cur string
		if err := rows.Scan(&day, &l.EntryID, &l.Description, &l.SourceType, &l.SourceID, &cur, &l.Debit, &l.Credit); err != nil {
			rows.Close()
			return nil, fmt.Errorf("account ledger: %w", err)
		}
		l.Date, l.Currency = civilDate(day), currencyOf(cur)
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("account ledger: %w", err)
	}
	return ledger.NewAccountLedger(company, acc, from, to, opening, lines), nil
}

// Invoice returns an invoice, by number or id, with its credit notes and
// the payments allocated to it; not_found when the company has no such
// invoice.
func Invoice(ctx context.Context, q Querier, company, numberOrID string) (*ledger.InvoiceDetail, error) {
	if _, err := loadCompany(ctx, q, company); err != nil {
		return nil, err
	}
	where := `number = $2`
	var key any = numberOrID
	if id, err := uuid.Parse(numberOrID); err == nil {
		where, key = `id = $2`, id
	}
	inv := &ledger.Invoice{Company: company}
	var cur string
	var issue, due time.Time
	err := q.QueryRow(ctx, `
		SELECT id, number, series, sequence, order_id, customer_id, customer_name, customer_vat_id,
		       customer_country, customer_code, currency, issue_date, due_date, journal_entry_id
		  FROM invoices WHERE company_id = $1 AND `+where, company, key).Scan(
		&inv.ID, &inv.Number, &inv.Series, &inv.Sequence, &inv.OrderID, &inv.Customer.ID, &inv.Customer.Name,
		&inv.Customer.VATID, &inv.Customer.Country, &inv.Customer.Code, &cur, &issue, &due, &inv.JournalEntryID)
	if errors.Is(err, pgx.ErrNoRows) {
		e := ledger.Errorf(ledger.CodeNotFound, "company %q has no invoice %q", company, numberOrID)
		e.Details = map[string]any{"invoice": numberOrID}
		return nil, e
	}
	if err != nil {
		return nil, fmt.Errorf("look up invoice: %w", err)
	}
	inv.Currency, inv.CreateInvoice.Currency = currencyOf(cur), cur
	inv.IssueDate, inv.DueDate = civilDate(issue), civilDate(due)

	rows, err := q.Query(ctx, `
		SELECT description, quantity::text, unit_price::text, vat_rate::text, net::text, vat::text, gross::text, vat_treatment
		  FROM invoice_lines WHERE invoice_id = $1 ORDER BY line_no`, inv.ID)
	if err != nil {
		return nil, fmt.Errorf("invoice lines: %w", err)
	}
	var amounts []ledger.LineAmounts
	var rates []decimal.Decimal
	for rows.Next() {
		var l ledger.InvoiceLine
		var a ledger.LineAmounts
		if err := rows.Scan(&l.Description, &l.Quantity.Decimal, &l.UnitPrice.Decimal, &l.VATRate.Decimal, &a.Net, &a.VAT, &a.Gross, &l.VATTreatment); err != nil {
			rows.Close()
			return nil, fmt.Errorf("invoice lines: %w", err)
		}
		inv.Lines = append(inv.Lines, l)
		amounts, rates = append(amounts, a), append(rates, l.VATRate.Decimal)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("invoice lines: %w", err)
	}
	inv.Totals = ledger.TotalsFromLines(amounts, rates)

	d := &ledger.InvoiceDetail{Invoice: inv}
	rows, err = q.Query(ctx, `
		SELECT id, number, issue_date, reason, net::text, vat::text
		  FROM credit_notes WHERE invoice_id = $1
		 ORDER BY issue_date, created_at, id`, inv.ID)
	if err != nil {
		return nil, fmt.Errorf("credit notes: %w", err)
	}
	for rows.Next() {
		var c ledger.InvoiceCredit
		var day time.Time
		if err := rows.Scan(&c.ID, &c.Number, &day, &c.Reason, &c.Net, &c.VAT); err != nil {
			rows.Close()
			return nil, fmt.Errorf("credit notes: %w", err)
		}
		c.IssueDate = civilDate(day)
		d.CreditNotes = append(d.CreditNotes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("credit notes: %w", err)
	}

	rows, err = q.Query(ctx, `
		SELECT id, payment_ref, received_on, method, amount FROM (
		SELECT p.id, p.payment_ref, p.received_on, p.method, a.amount::text AS amount, p.created_at
		  FROM payment_allocations a JOIN payments p ON p.id = a.payment_id
		 WHERE a.invoice_id = $1
		 UNION ALL
		SELECT m.id, '', m.entry_date, $2, (-m.amount)::text, m.created_at
		  FROM customer_credit_movements m
		 WHERE m.invoice_id = $1 AND m.kind = 'application') p
		 ORDER BY received_on, created_at, id`, inv.ID, ledger.MethodCustomerCredit)
	if err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	for rows.Next() {
		var p ledger.InvoicePayment
		var day time.Time
		if err := rows.Scan(&p.PaymentID, &p.PaymentRef, &day, &p.Method, &p.Amount); err != nil {
			rows.Close()
			return nil, fmt.Errorf("payments: %w", err)
		}
		p.ReceivedOn = civilDate(day)
		d.Payments = append(d.Payments, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	if err := q.QueryRow(ctx, `
		SELECT coalesce(sum(amount), 0)::text FROM customer_credit_movements
		 WHERE invoice_id = $1 AND kind = 'credit_note'`, inv.ID).Scan(&d.ToCustomerCredit); err != nil {
		return nil, fmt.Errorf("customer credit: %w", err)
	}
	return d, nil
}

// Register returns the month's invoice register: sales invoices and credit
// notes issued and purchase invoices and supplier credit notes received in
// p, by issue date, with their amounts per VAT rate, and the purchase
// invoices reversed in p (each with its own number, dates and amounts).
func Register(ctx context.Context, q Querier, company string, p ledger.Period) (*ledger.Register, error) {
	c, err := loadCompany(ctx, q, company)
	if err != nil {
		return nil, err
	}
	// One row per document, rate and VAT treatment; the document columns repeat. Grouping
	// by the document's primary key lets its other columns be selected.
	// Amounts are in the company's currency ($4), which VAT is declared
	// in; documents posted before lines kept that (all NULL) are shown in
	// their own. A purchase invoice is in the month it was registered in
	// (booked), on its registration_date; one recorded before that was
	// kept is in its issue month, registered the day it was recorded, in
	// the register's time zone ($5).
	rows, err := q.Query(ctx, `
		SELECT 'invoice', i.id, i.number, i.issue_date, i.customer_id, i.customer_vat_id, i.customer_country,
		       i.customer_name, i.customer_code, NULL::date, `+inCompanyCurrency("i.currency", "''", "NULL::date")+`
		  FROM invoices i JOIN invoice_lines l ON l.invoice_id = i.id
		 WHERE i.company_id = $1 AND i.issue_date BETWEEN $2 AND $3
		 GROUP BY i.id, l.vat_rate, l.vat_treatment
		UNION ALL
		SELECT 'credit_note', c.id, c.number, c.issue_date, i.customer_id, i.customer_vat_id, i.customer_country,
		       i.customer_name, i.customer_code, NULL::date, `+inCompanyCurrency("c.currency", "i.number", "i.issue_date")+`
		  FROM credit_notes c JOIN invoices i ON i.id = c.invoice_id
		  JOIN credit_note_lines l ON l.credit_note_id = c.id
		 WHERE c.company_id = $1 AND c.issue_date BETWEEN $2 AND $3
		 GROUP BY c.id, i.id, l.vat_rate, l.vat_treatment
		UNION ALL
		SELECT CASE WHEN p.credits_invoice_id IS NULL THEN 'purchase_invoice' ELSE 'purchase_credit_note' END,
		       p.id, p.document_number, p.issue_date, p.supplier_id, p.supplier_vat_id,
		       p.supplier_country, p.supplier_name, p.supplier_code, coalesce(p.registration_date, (p.created_at AT TIME ZONE $5)::date),
		       `+inCompanyCurrency("p.currency", "coalesce(ci.document_number, '')", "ci.issue_date")+`
		  FROM purchase_invoices p JOIN purchase_invoice_lines l ON l.purchase_invoice_id = p.id
		  LEFT JOIN purchase_invoices ci ON ci.id = p.credits_invoice_id
		 WHERE p.company_id = $1 AND coalesce(p.registration_date, p.issue_date) BETWEEN $2 AND $3
		 GROUP BY p.id, ci.id, l.vat_rate, l.vat_treatment
		UNION ALL
		SELECT 'purchase_reversal', r.id, p.document_number, p.issue_date, p.supplier_id, p.supplier_vat_id,
		       p.supplier_country, p.supplier_name, p.supplier_code, r.registration_date,
		       `+inCompanyCurrency("p.currency", "''", "NULL::date")+`
		  FROM purchase_reversals r JOIN purchase_invoices p ON p.id = r.purchase_invoice_id
		  JOIN purchase_invoice_lines l ON l.purchase_invoice_id = p.id
		 WHERE r.company_id = $1 AND r.registration_date BETWEEN $2 AND $3
		 GROUP BY r.id, p.id, l.vat_rate, l.vat_treatment`, company, p.First().Time, p.Last().Time, c.Currency, ledger.RegisterTimeZone)
	if err != nil {
		return nil, fmt.Errorf("invoice register: %w", err)
	}
	var docs []ledger.RegisterDocument
	index := map[uuid.UUID]int{}
	for rows.Next() {
		var (
			d        ledger.RegisterDocument
			typ, cur string
			id       uuid.UUID
			day      time.Time
			refNo    string
			refDate  *time.Time
			recorded *time.Time
			rate     ledger.RateTotal
		)
		if err := rows.Scan(&typ, &id, &d.Number, &day, &d.Counterparty.ID, &d.Counterparty.VATID, &d.Counterparty.Country,
			&d.Counterparty.Name, &d.CounterpartyCode, &recorded, &cur, &refNo, &refDate, &rate.Rate, &rate.Treatment, &rate.Net, &rate.VAT); err != nil {
			rows.Close()
			return nil, fmt.Errorf("invoice register: %w", err)
		}
		if ledger.DocumentType(typ) == ledger.DocumentPurchaseCreditNote {
			// Stored as its entry posts it (negative); the register shows
			// a document's amounts as printed on it.
			rate.Net, rate.VAT = rate.Net.Neg(), rate.VAT.Neg()
		}
		i, ok := index[id]
		if !ok {
			d.Type, d.Date, d.Currency = ledger.DocumentType(typ), civilDate(day), currencyOf(cur)
			if refNo != "" && refDate != nil {
				d.Reference = &ledger.DocumentReference{Number: refNo, Date: civilDate(*refDate)}
			}
			if recorded != nil {
				d.Recorded = civilDate(*recorded)
			}
			i = len(docs)
			index[id] = i
			docs = append(docs, d)
		}
		docs[i].Rates = append(docs[i].Rates, rate)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("invoice register: %w", err)
	}
	return ledger.NewRegister(c, p, docs), nil
}

// inCompanyCurrency selects a register row's currency, reference and
// amounts: in the company's currency ($4) when every line has them, else in
// the document's (docCurrency).
func inCompanyCurrency(docCurrency, refNo, refDate string) string {
	return `CASE WHEN count(l.net_company) = count(*) THEN $4 ELSE ` + docCurrency + ` END,
		       ` + refNo + `, ` + refDate + `, l.vat_rate::text, l.vat_treatment,
		       (CASE WHEN count(l.net_company) = count(*) THEN sum(l.net_company) ELSE sum(l.net) END)::text,
		       (CASE WHEN count(l.net_company) = count(*) THEN sum(l.vat_company) ELSE sum(l.vat) END)::text`
}

// VATReturn sums the month's register per currency and rate: output VAT on
// sales invoices less credit notes, input VAT on purchase invoices.
func VATReturn(ctx context.Context, q Querier, company string, p ledger.Period) (*ledger.VATReturn, error) {
	r, err := Register(ctx, q, company, p)
	if err != nil {
		return nil, err
	}
	return ledger.NewVATReturn(r), nil
}

// Aged returns the open items of one side of the books at asOf: the sales
// invoices (receivables) or purchase invoices (payables) with an amount
// open that day, in their currency and the company's. What is open is
// what the items' entries on the account (1200 or 2100) dated up to asOf
// leave, so the report's total is that account's balance at asOf in the
// company's currency (negated for payables, a credit balance), but on a
// month's last day revalued with fx.revalue, whose entry of that day is on
// the account and not in the report.
func Aged(ctx context.Context, q Querier, company string, kind ledger.AgedKind, asOf ledger.Date) (*ledger.AgedReport, error) {
	c, err := loadCompany(ctx, q, company)
	if err != nil {
		return nil, err
	}
	query := agedReceivables
	if kind == ledger.AgedPayables {
		query = agedPayables
	}
	rows, err := q.Query(ctx, query, company, asOf.Time)
	if err != nil {
		return nil, fmt.Errorf("aged %s: %w", kind, err)
	}
	var items []ledger.AgedItem
	for rows.Next() {
		var it ledger.AgedItem
		var cur string
		var issue, due time.Time
		if err := rows.Scan(&it.DocumentID, &it.CounterpartyID, &it.CounterpartyName, &it.Number, &issue, &due, &cur,
			&it.Open, &it.OpenCompany); err != nil {
			rows.Close()
			return nil, fmt.Errorf("aged %s: %w", kind, err)
		}
		it.IssueDate, it.DueDate, it.Currency = civilDate(issue), civilDate(due), currencyOf(cur)
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("aged %s: %w", kind, err)
	}
	return ledger.NewAgedReport(c, currencyOf(c.Currency), kind, asOf, items), nil
}

// Credits returns the customers' or suppliers' credits of company open on
// asOf: each party's credit per currency from its movements dated up to
// then, in its currency and in the company's at the rates it was booked at.
func Credits(ctx context.Context, q Querier, company string, kind ledger.CreditsKind, asOf ledger.Date) (*ledger.CreditsReport, error) {
	c, err := loadCompany(ctx, q, company)
	if err != nil {
		return nil, err
	}
	table, party := "customer_credit_movements", "customer_id"
	if kind == ledger.SuppliersCredits {
		table, party = "supplier_credit_movements", "supplier_id"
	}
	rows, err := q.Query(ctx, `
		SELECT `+party+`, currency::text, sum(amount)::text, sum(coalesce(amount_company, amount))::text, min(entry_date), max(entry_date)
		  FROM `+table+`
		 WHERE company_id = $1 AND entry_date <= $2
		 GROUP BY 1, 2
		HAVING sum(amount) <> 0 OR sum(coalesce(amount_company, amount)) <> 0
		 ORDER BY 1, 2`, company, asOf.Time)
	if err != nil {
		return nil, fmt.Errorf("%s credits: %w", kind, err)
	}
	r := &ledger.CreditsReport{Company: company, Currency: currencyOf(c.Currency), Kind: kind, AsOf: asOf}
	for rows.Next() {
		var it ledger.CreditBalance
		var cur, balance, balanceCo string
		var since, last time.Time
		if err := rows.Scan(&it.PartyID, &cur, &balance, &balanceCo, &since, &last); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%s credits: %w", kind, err)
		}
		it.Currency, it.Balance, it.BalanceCompany = currencyOf(cur), dec(balance), dec(balanceCo)
		it.Since, it.LastMovement = civilDate(since), civilDate(last)
		r.Items = append(r.Items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s credits: %w", kind, err)
	}
	return r, nil
}

// agedReceivables lists the sales invoices of company $1 with an amount
// open at $2: the invoice's gross less what relieved its receivable by
// then, each part in the invoice's currency and the company's. The parts
// are those the entries on 1200 post (see ledger.IssueInvoice,
// ApplyPayment, IssueCreditNote, ApplyCredit): the invoice by its issue
// date; payments' allocations by the day the payment was received; credit
// notes by their issue date, only the part that relieved the receivable
// (what went beyond, to the customer's credit, is its movement of kind
// credit_note); the customer's credit applied, by its day. Company amounts
// not kept (documents posted before they were) count the document's own,
// as the trial balance does. The receivables openings left open follow
// (agedOpeningItems).
const agedReceivables = `
	WITH parts AS (
	    SELECT i.id AS invoice_id, i.gross AS doc,
	           CASE WHEN i.exchange_rate IS NULL THEN i.gross
	                ELSE (SELECT sum(l.net_company + l.vat_company) FROM invoice_lines l WHERE l.invoice_id = i.id) END AS company
	      FROM invoices i
	     WHERE i.company_id = $1 AND i.issue_date <= $2
	    UNION ALL
	    SELECT a.invoice_id, -a.amount, -coalesce(a.amount_company, a.amount)
	      FROM payment_allocations a JOIN payments p ON p.id = a.payment_id
	     WHERE p.company_id = $1 AND p.received_on <= $2
	    UNION ALL
	    SELECT n.invoice_id, -(n.gross - coalesce(m.amount, 0)), -coalesce(n.receivable_company, n.gross - coalesce(m.amount, 0))
	      FROM credit_notes n
	      LEFT JOIN customer_credit_movements m ON m.source_id = n.id AND m.kind = 'credit_note'
	     WHERE n.company_id = $1 AND n.issue_date <= $2
	    UNION ALL
	    SELECT m.invoice_id, m.amount, -coalesce(m.invoice_company, -m.amount)
	      FROM customer_credit_movements m
	     WHERE m.company_id = $1 AND m.kind = 'application' AND m.invoice_id IS NOT NULL AND m.entry_date <= $2),
	open AS (
	    SELECT invoice_id, sum(doc) AS doc, sum(company) AS company FROM parts GROUP BY invoice_id
	    HAVING sum(doc) <> 0 OR sum(company) <> 0)
	SELECT i.id, i.customer_id, i.customer_name, i.number, i.issue_date, i.due_date, i.currency::text,
	       o.doc::text, o.company::text
	  FROM open o JOIN invoices i ON i.id = o.invoice_id
	 UNION ALL
	` + agedOpeningItems + ` AND o.kind = 'receivable'`

// agedPayables lists the purchase invoices of company $1 with an amount
// open at $2: what the entries of the invoice, of the supplier's credit
// notes of it and of its reversal, dated up to $2 (the days they were
// registered), leave on payables (2100). The lines on 2100 are the
// supplier's part: a reverse-charged line's VAT is not on them; less what
// supplier payments paid on or before $2 allocated to it.
const agedPayables = `
	WITH parts AS (
	    SELECT coalesce(p.credits_invoice_id, p.id) AS invoice_id, l.credit - l.debit AS doc,
	           coalesce(l.credit_company, l.credit) - coalesce(l.debit_company, l.debit) AS company
	      FROM purchase_invoices p
	      JOIN journal_entries e ON e.id = p.journal_entry_id
	      JOIN journal_lines l ON l.entry_id = e.id AND l.account_code = '` + ledger.AccountPayables + `'
	     WHERE p.company_id = $1 AND e.entry_date <= $2
	    UNION ALL
	    SELECT r.purchase_invoice_id, l.credit - l.debit,
	           coalesce(l.credit_company, l.credit) - coalesce(l.debit_company, l.debit)
	      FROM purchase_reversals r
	      JOIN journal_entries e ON e.id = r.journal_entry_id
	      JOIN journal_lines l ON l.entry_id = e.id AND l.account_code = '` + ledger.AccountPayables + `'
	     WHERE r.company_id = $1 AND e.entry_date <= $2
	    UNION ALL
	    -- Supplier payments paid on or before $2 relieve what they were
	    -- allocated to, at the booked rate (amount_company).
	    SELECT a.purchase_invoice_id, -a.amount, -a.amount_company
	      FROM supplier_payment_allocations a JOIN supplier_payments s ON s.id = a.payment_id
	     WHERE s.company_id = $1 AND s.paid_on <= $2
	    UNION ALL
	    -- So do credits with suppliers applied on or before $2.
	    SELECT m.purchase_invoice_id, m.amount, -m.payable_company
	      FROM supplier_credit_movements m
	     WHERE m.company_id = $1 AND m.purchase_invoice_id IS NOT NULL AND m.entry_date <= $2
	),
	open AS (
	    SELECT invoice_id, sum(doc) AS doc, sum(company) AS company FROM parts GROUP BY invoice_id
	    HAVING sum(doc) <> 0 OR sum(company) <> 0)
	SELECT p.id, p.supplier_key, p.supplier_name, p.document_number, p.issue_date, p.due_date, p.currency::text,
	       o.doc::text, o.company::text
	  FROM open o JOIN purchase_invoices p ON p.id = o.invoice_id
	 UNION ALL
	` + agedOpeningItems + ` AND o.kind = 'payable'`

// agedOpeningItems are the previous books' invoices an opening of company
// $1 on or before $2 left open, less what was applied to them on or before
// $2 by payments received or paid, customers' credits and credits with
// suppliers: a supplier is keyed by its ID (an opening names no VAT ID),
// and a document without a due date is due when issued.
const agedOpeningItems = `
	SELECT o.id, CASE o.kind WHEN 'payable' THEN purchase_supplier_key('', '', o.party_id) ELSE o.party_id END, '', o.number, o.issue_date,
	       coalesce(o.due_date, o.issue_date), o.currency::text, (o.amount - coalesce(a.amount, 0))::text,
	       (o.amount_company - coalesce(a.company, 0))::text
	  FROM opening_items o JOIN opening_balances b ON b.id = o.opening_id
	  LEFT JOIN LATERAL (
	       SELECT sum(x.amount) AS amount, sum(x.amount_company) AS company FROM (
	              SELECT x.amount, x.amount_company
	                FROM opening_allocations x
	                LEFT JOIN payments p ON p.id = x.payment_id
	                LEFT JOIN supplier_payments s ON s.id = x.supplier_payment_id
	               WHERE x.opening_item_id = o.id AND coalesce(p.received_on, s.paid_on) <= $2
	              UNION ALL
	              SELECT -m.amount, m.payable_company FROM supplier_credit_movements m
	               WHERE m.opening_item_id = o.id AND m.entry_date <= $2
	              UNION ALL
	              SELECT -m.amount, m.invoice_company FROM customer_credit_movements m
	               WHERE m.opening_item_id = o.id AND m.entry_date <= $2) x) a ON true
	 WHERE o.company_id = $1 AND b.opened_on <= $2
	   AND (o.amount <> coalesce(a.amount, 0) OR o.amount_company <> coalesce(a.company, 0))`
