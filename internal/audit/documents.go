package audit

import (
	"context"
	"strings"

	"github.com/onceledger/onceledger/ledger"
)

// Documents: each is its lines, its entry posts what it says, and what
// corrects or pays a document stays within it. Like the books' checks,
// each query is a flagged query; $1 is the company filter.

// documentTotalsSQL compares every invoice, credit note and purchase
// invoice with the sums of its lines and with its journal entry, on the
// accounts its kind posts to:
//
//	invoice           Dr 1200 gross, Cr 4000 net, Cr 2300 VAT
//	credit note       Dr 4000 net, Dr 2300 VAT, Cr 1200 and 2200 gross between them
//	purchase invoice  Dr its lines' accounts net, Dr 1300 VAT, Cr 2100 gross
//	                  less the VAT it assesses, Cr 2300 that VAT
//	purchase credit   the same with negative amounts (its lines are
//	note              negative): the purchase's entry reversed
//	purchase          its invoice's amounts negated, and its invoice's
//	reversal          entry with the sides swapped
//
// A purchase's reverse-charged lines carry VAT the company assesses
// itself (docs/vat.md): it owes that VAT (2300) and deducts it (1300) at
// once, and the supplier is owed the rest of the gross, so its entry's
// gross is 2100 and 2300 together, and 2300 must hold exactly the VAT of
// those lines. Lines of an exchange difference carry no amount in the
// document's currency, and a credit note's part to the customer's credit
// is on 2200; the check reads the document's currency only, in which
// neither changes a total.
//
// The entry must be of the document's company, with every line in it and
// in the document's currency. A violation names the document and its
// first difference: header against lines, else entry against header.
var documentTotalsSQL = `
WITH lines AS (
	SELECT invoice_id AS id, sum(net) AS net, sum(vat) AS vat, sum(gross) AS gross, 0 AS assessed FROM invoice_lines GROUP BY 1
	UNION ALL
	SELECT credit_note_id, sum(net), sum(vat), sum(gross), 0 FROM credit_note_lines GROUP BY 1
	UNION ALL
	SELECT purchase_invoice_id, sum(net), sum(vat), sum(gross),
	       coalesce(sum(vat) FILTER (WHERE vat_treatment LIKE 'reverse\_charge\_%'), 0)
	  FROM purchase_invoice_lines GROUP BY 1
	UNION ALL
	SELECT r.id, -sum(l.net), -sum(l.vat), -sum(l.gross),
	       -coalesce(sum(l.vat) FILTER (WHERE l.vat_treatment LIKE 'reverse\_charge\_%'), 0)
	  FROM purchase_reversals r JOIN purchase_invoice_lines l ON l.purchase_invoice_id = r.purchase_invoice_id
	 WHERE ($1::text = '' OR r.company_id = $1)
	 GROUP BY 1),
docs AS (
	SELECT 'invoice' AS kind, id, company_id, number AS label, issue_date AS day, currency::text AS currency,
	       net, vat, gross, journal_entry_id
	  FROM invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT 'credit note', id, company_id, number, issue_date, currency::text, net, vat, gross, journal_entry_id
	  FROM credit_notes WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT CASE WHEN credits_invoice_id IS NULL THEN 'purchase invoice' ELSE 'purchase credit note' END,
	       id, company_id, document_number, issue_date, currency::text, net, vat, gross, journal_entry_id
	  FROM purchase_invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT 'purchase reversal', r.id, r.company_id, p.document_number, r.registration_date, p.currency::text,
	       -p.net, -p.vat, -p.gross, r.journal_entry_id
	  FROM purchase_reversals r JOIN purchase_invoices p ON p.id = r.purchase_invoice_id
	 WHERE ($1::text = '' OR r.company_id = $1)),
posted AS (
	SELECT l.entry_id, min(l.company_id) AS first_company, max(l.company_id) AS last_company,
	       min(l.currency::text) AS first_currency, max(l.currency::text) AS last_currency,
	       sum(l.debit - l.credit) FILTER (WHERE l.account_code = '` + ledger.AccountReceivables + `') AS receivables,
	       sum(l.credit - l.debit) FILTER (WHERE l.account_code = '` + ledger.AccountCustomerCredits + `') AS credits,
	       sum(l.credit - l.debit) FILTER (WHERE l.account_code = '` + ledger.AccountRevenue + `') AS revenue,
	       sum(l.credit - l.debit) FILTER (WHERE l.account_code = '` + ledger.AccountOutputVAT + `') AS output_vat,
	       sum(l.debit - l.credit) FILTER (WHERE l.account_code = '` + ledger.AccountInputVAT + `') AS input_vat,
	       sum(l.credit - l.debit) FILTER (WHERE l.account_code = '` + ledger.AccountPayables + `') AS payables,
	       sum(l.debit - l.credit) FILTER (WHERE l.account_code NOT IN ('` + ledger.AccountReceivables + `', '` + ledger.AccountCustomerCredits + `', '` + ledger.AccountRevenue + `', '` + ledger.AccountOutputVAT + `', '` + ledger.AccountInputVAT + `', '` + ledger.AccountPayables + `')) AS other
	  FROM journal_lines l
	 WHERE ` + entriesOfDocs + `
	 GROUP BY l.entry_id),
compared AS (
	SELECT d.*, coalesce(l.net, 0) AS lines_net, coalesce(l.vat, 0) AS lines_vat, coalesce(l.gross, 0) AS lines_gross,
	       coalesce(l.assessed, 0) AS lines_assessed, coalesce(p.output_vat, 0) AS entry_output_vat,
	       e.company_id AS entry_company, p.first_company, p.last_company, p.first_currency, p.last_currency,
	       -- what the entry says the document's net, VAT and gross are, and
	       -- whether it posts to no account its kind does not post to
	       CASE d.kind WHEN 'invoice' THEN coalesce(p.revenue, 0)
	                   WHEN 'credit note' THEN -coalesce(p.revenue, 0)
	                   ELSE coalesce(p.other, 0) END AS entry_net,
	       CASE d.kind WHEN 'invoice' THEN coalesce(p.output_vat, 0)
	                   WHEN 'credit note' THEN -coalesce(p.output_vat, 0)
	                   ELSE coalesce(p.input_vat, 0) END AS entry_vat,
	       CASE d.kind WHEN 'invoice' THEN coalesce(p.receivables, 0)
	                   WHEN 'credit note' THEN coalesce(p.credits, 0) - coalesce(p.receivables, 0)
	                   ELSE coalesce(p.payables, 0) + coalesce(p.output_vat, 0) END AS entry_gross,
	       CASE d.kind WHEN 'invoice' THEN coalesce(p.credits, 0) = 0 AND coalesce(p.input_vat, 0) = 0 AND coalesce(p.payables, 0) = 0 AND coalesce(p.other, 0) = 0
	                   WHEN 'credit note' THEN coalesce(p.input_vat, 0) = 0 AND coalesce(p.payables, 0) = 0 AND coalesce(p.other, 0) = 0
	                   ELSE coalesce(p.receivables, 0) = 0 AND coalesce(p.credits, 0) = 0 AND coalesce(p.revenue, 0) = 0 END AS entry_only_kind
	  FROM docs d
	  LEFT JOIN lines l ON l.id = d.id
	  LEFT JOIN journal_entries e ON e.id = d.journal_entry_id
	  LEFT JOIN posted p ON p.entry_id = d.journal_entry_id),
counted AS (SELECT count(*) AS n, '' AS note FROM docs),
flagged AS (
	SELECT company_id, id::text AS ref,
	       format('%s %s of %s: ', kind, label, day) ||
	       CASE WHEN (lines_net, lines_vat, lines_gross) <> (net, vat, gross) OR gross <> net + vat
	            THEN format('the document says net %s, VAT %s, gross %s but its lines sum to net %s, VAT %s, gross %s',
	                        money[net; currency], money[vat; currency], money[gross; currency],
	                        money[lines_net; currency], money[lines_vat; currency], money[lines_gross; currency])
	            WHEN entry_company IS NULL THEN format('its journal entry %s does not exist', journal_entry_id)
	            WHEN entry_company <> company_id OR first_company <> company_id OR last_company <> company_id
	            THEN format('its journal entry %s is of company %s with lines of %s', journal_entry_id, entry_company,
	                        CASE WHEN first_company = last_company THEN first_company ELSE first_company || ' and ' || last_company END)
	            WHEN first_currency <> currency OR last_currency <> currency
	            THEN format('its journal entry %s posts in %s where the document is in %s', journal_entry_id,
	                        CASE WHEN first_currency = currency THEN last_currency ELSE first_currency END, currency)
	            WHEN kind IN ('purchase invoice', 'purchase credit note', 'purchase reversal') AND (entry_net, entry_vat, entry_gross) = (net, vat, gross) AND entry_only_kind
	                 AND entry_output_vat <> lines_assessed
	            THEN format('its journal entry %s credits %s to 2300 where its reverse-charged lines assess VAT %s',
	                        journal_entry_id, money[entry_output_vat; currency], money[lines_assessed; currency])
	            ELSE format('the document says net %s, VAT %s, gross %s but its journal entry %s posts net %s, VAT %s, gross %s%s',
	                        money[net; currency], money[vat; currency], money[gross; currency], journal_entry_id,
	                        money[entry_net; currency], money[entry_vat; currency], money[entry_gross; currency],
	                        CASE WHEN NOT entry_only_kind THEN format(', and posts to accounts a %s does not post to', kind) ELSE '' END)
	       END AS detail
	  FROM compared
	 WHERE (lines_net, lines_vat, lines_gross) <> (net, vat, gross) OR gross <> net + vat
	    OR entry_company IS NULL OR entry_company <> company_id OR first_company <> company_id OR last_company <> company_id
	    OR first_currency <> currency OR last_currency <> currency
	    OR (entry_net, entry_vat, entry_gross) <> (net, vat, gross) OR NOT entry_only_kind
	    OR (kind IN ('purchase invoice', 'purchase credit note', 'purchase reversal') AND entry_output_vat <> lines_assessed))`

// entriesOfDocs is where documentTotalsSQL reads the lines of its
// documents' entries. Auditing one company it looks them up by entry;
// auditing all, it reads every line in the order of its primary key,
// which is faster than a lookup per entry when most entries are
// documents'. An entry that is no document's joins nothing either way.
const entriesOfDocs = `l.entry_id IN (SELECT journal_entry_id FROM docs)`

var documentTotalsAllSQL = strings.Replace(documentTotalsSQL, entriesOfDocs, "true", 1)

func documentTotals(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	if a.opts.Company == "" {
		return a.flagged(ctx, name, documentTotalsAllSQL)
	}
	return a.flagged(ctx, name, documentTotalsSQL)
}

// creditNotesSQL: per invoice and VAT rate, its credit notes together
// take back no more net and no more VAT than the invoice charged. One
// violation per invoice, at its first rate over.
const creditNotesSQL = `
WITH credited AS (
	SELECT n.company_id, n.invoice_id, l.vat_rate, sum(l.net) AS net, sum(l.vat) AS vat,
	       count(DISTINCT n.id) AS notes, max(n.number) AS last_note
	  FROM credit_notes n JOIN credit_note_lines l ON l.credit_note_id = n.id
	 WHERE ($1::text = '' OR n.company_id = $1)
	 GROUP BY 1, 2, 3),
invoiced AS (
	SELECT invoice_id, vat_rate, sum(net) AS net, sum(vat) AS vat
	  FROM invoice_lines WHERE invoice_id IN (SELECT invoice_id FROM credited)
	 GROUP BY 1, 2),
counted AS (SELECT count(DISTINCT invoice_id) AS n, '' AS note FROM credited),
flagged AS (
	SELECT DISTINCT ON (c.invoice_id) c.company_id, c.invoice_id::text AS ref,
	       format('invoice %s: %s credit note(s) up to %s take back net %s, VAT %s at VAT rate %s where the invoice charged net %s, VAT %s',
	              coalesce(inv.number, '(missing)'), c.notes, c.last_note, money[c.net; inv.currency], money[c.vat; inv.currency], trim_scale(c.vat_rate),
	              money[coalesce(i.net, 0); inv.currency], money[coalesce(i.vat, 0); inv.currency]) AS detail
	  FROM credited c
	  LEFT JOIN invoiced i ON i.invoice_id = c.invoice_id AND i.vat_rate = c.vat_rate
	  LEFT JOIN invoices inv ON inv.id = c.invoice_id
	 WHERE c.net > coalesce(i.net, 0) OR c.vat > coalesce(i.vat, 0)
	 ORDER BY c.invoice_id, c.vat_rate)`

// paymentsSQL: a payment's allocations and what it left unapplied make
// its amount, an invoice is paid (by payments and by customers' credit)
// no more than what its credit notes left of it, and an opening's
// receivable (by the same) no more than was open on it.
const paymentsSQL = `
WITH pays AS (
	SELECT p.company_id, p.id, p.payment_ref, p.currency::text AS currency, p.amount, p.unapplied,
	       coalesce(sum(a.amount), 0) + coalesce((SELECT sum(o.amount) FROM opening_allocations o WHERE o.payment_id = p.id), 0) AS allocated
	  FROM payments p LEFT JOIN payment_allocations a ON a.payment_id = p.id
	 WHERE ($1::text = '' OR p.company_id = $1)
	 GROUP BY p.id),
opening_paid AS (
	SELECT o.company_id, o.id, o.number, o.currency::text AS currency, o.amount, sum(a.amount) AS paid
	  FROM opening_items o
	  JOIN (SELECT opening_item_id, amount FROM opening_allocations WHERE payment_id IS NOT NULL
	        UNION ALL
	        SELECT opening_item_id, -amount FROM customer_credit_movements
	         WHERE opening_item_id IS NOT NULL AND ($1::text = '' OR company_id = $1)) a ON a.opening_item_id = o.id
	 WHERE o.kind = 'receivable' AND ($1::text = '' OR o.company_id = $1)
	 GROUP BY o.id),
paid AS (
	SELECT invoice_id, sum(amount) AS amount FROM (
		SELECT invoice_id, amount FROM payment_allocations
		UNION ALL
		SELECT invoice_id, -amount FROM customer_credit_movements WHERE kind = 'application' AND invoice_id IS NOT NULL) x
	 GROUP BY 1),
owed AS (
	SELECT i.company_id, i.id, i.number, i.currency::text AS currency, i.gross, p.amount AS paid,
	       coalesce((SELECT sum(c.gross) FROM credit_notes c WHERE c.invoice_id = i.id), 0) AS credited,
	       coalesce((SELECT sum(m.amount) FROM customer_credit_movements m WHERE m.kind = 'credit_note' AND m.invoice_id = i.id), 0) AS refunded
	  FROM invoices i JOIN paid p ON p.invoice_id = i.id
	 WHERE ($1::text = '' OR i.company_id = $1)),
counted AS (SELECT (SELECT count(*) FROM pays) + (SELECT count(*) FROM owed) + (SELECT count(*) FROM opening_paid) AS n, '' AS note),
flagged AS (
	SELECT company_id, id::text AS ref,
	       format('payment %s of %s allocates %s and leaves %s unapplied: %s in all', payment_ref, money[amount; currency],
	              money[allocated; currency], money[unapplied; currency], money[allocated + unapplied; currency]) AS detail
	  FROM pays WHERE allocated + unapplied <> amount
	UNION ALL
	SELECT company_id, id::text,
	       format('invoice %s is paid %s but owes %s (gross %s, credited %s of which %s went to the customer''s credit)',
	              number, money[paid; currency], money[gross - credited + refunded; currency], money[gross; currency], money[credited; currency], money[refunded; currency])
	  FROM owed WHERE paid > gross - credited + refunded
	UNION ALL
	SELECT company_id, id::text, format('opening receivable %s is paid %s but was open for %s', number, money[paid; currency], money[amount; currency])
	  FROM opening_paid WHERE paid > amount)`

// manualJournalsSQL: every manual journal entry (journal_entry.record) has
// the journal entry it names, of its company, date and source, and every
// journal entry of source 'journal' is a manual journal entry's; and no
// line of one posts to an account only documents post to ($3), which would
// leave receivables, payables, VAT, credits or fixed assets disagreeing
// with the documents that keep them.
const manualJournalsSQL = `
WITH manual AS (
	SELECT m.company_id, m.id, m.entry_ref, m.entry_date, e.id AS entry_id, e.company_id AS entry_company,
	       e.entry_date AS posted, e.source_type, e.source_id
	  FROM manual_journals m LEFT JOIN journal_entries e ON e.id = m.journal_entry_id
	 WHERE ($1::text = '' OR m.company_id = $1)),
orphans AS (
	SELECT e.company_id, e.id FROM journal_entries e
	 WHERE e.source_type = 'journal' AND ($1::text = '' OR e.company_id = $1)
	   AND NOT EXISTS (SELECT FROM manual_journals m WHERE m.id = e.source_id AND m.journal_entry_id = e.id)),
kept AS (
	SELECT m.company_id, m.id, m.entry_ref, l.line_no, l.account_code
	  FROM manual m JOIN journal_lines l ON l.entry_id = m.entry_id
	 WHERE l.account_code = ANY ($3::text[])),
counted AS (SELECT (SELECT count(*) FROM manual) + (SELECT count(*) FROM orphans) AS n, '' AS note),
flagged AS (
	SELECT company_id, id::text AS ref,
	       format('manual journal entry %s has no journal entry of its company, date and source', entry_ref) AS detail
	  FROM manual
	 WHERE entry_id IS NULL OR entry_company <> company_id OR posted <> entry_date OR source_type <> 'journal' OR source_id <> id
	UNION ALL
	SELECT company_id, id::text, 'journal entry of source journal that no manual journal entry names' FROM orphans
	UNION ALL
	SELECT company_id, id::text,
	       format('manual journal entry %s line %s posts to account %s, which only documents post to', entry_ref, line_no, account_code)
	  FROM kept)`

// closingEntriesSQL: the entries no document of its own shows (a year's
// close, a month-end revaluation and its reversal, an opening) are each
// named by the row that made them, of its company, date and source, and
// every entry of those sources is one's; a closed year's revenue and
// expense accounts net to nothing by its December 31; a revaluation's
// reversal is its entry the other way, per account and currency.
const closingEntriesSQL = `
WITH made AS (
	SELECT company_id, id, 'year close ' || year AS label, 'year_close' AS source, journal_entry_id AS entry_id, make_date(year, 12, 31) AS day
	  FROM year_closes WHERE journal_entry_id IS NOT NULL AND ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, id, 'revaluation of ' || to_char(month, 'YYYY-MM'), 'fx_revaluation', journal_entry_id, revaluation_date
	  FROM fx_revaluations WHERE journal_entry_id IS NOT NULL AND ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, id, 'reversal of the revaluation of ' || to_char(month, 'YYYY-MM'), 'fx_revaluation', reversal_entry_id, revaluation_date + 1
	  FROM fx_revaluations WHERE reversal_entry_id IS NOT NULL AND ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, id, 'opening of ' || opened_on, 'opening_balances', journal_entry_id, opened_on
	  FROM opening_balances WHERE ($1::text = '' OR company_id = $1)),
named AS (
	SELECT m.*, e.id AS found, e.company_id AS entry_company, e.entry_date, e.source_type, e.source_id
	  FROM made m LEFT JOIN journal_entries e ON e.id = m.entry_id),
orphans AS (
	SELECT e.company_id, e.id, e.source_type FROM journal_entries e
	 WHERE e.source_type IN ('year_close', 'fx_revaluation', 'opening_balances') AND ($1::text = '' OR e.company_id = $1)
	   AND NOT EXISTS (SELECT FROM made m WHERE m.entry_id = e.id)),
years AS (
	SELECT y.company_id, y.id, y.year, sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)) AS left_over,
	       min(c.currency) AS currency
	  FROM year_closes y
	  JOIN companies c ON c.id = y.company_id
	  JOIN journal_entries e ON e.company_id = y.company_id AND e.entry_date BETWEEN make_date(y.year, 1, 1) AND make_date(y.year, 12, 31)
	  JOIN journal_lines l ON l.entry_id = e.id
	  JOIN accounts a ON a.company_id = l.company_id AND a.code = l.account_code AND a.type IN ('revenue', 'expense')
	 WHERE ($1::text = '' OR y.company_id = $1)
	 GROUP BY 1, 2, 3
	HAVING sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)) <> 0),
unmirrored AS (
	SELECT v.company_id, v.id, to_char(v.month, 'YYYY-MM') AS month, l.account_code, l.currency::text AS currency,
	       sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)) AS net
	  FROM fx_revaluations v JOIN journal_lines l ON l.entry_id IN (v.journal_entry_id, v.reversal_entry_id)
	 WHERE ($1::text = '' OR v.company_id = $1)
	 GROUP BY 1, 2, 3, 4, 5
	HAVING sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)) <> 0
	    OR sum(l.debit - l.credit) <> 0),
counted AS (SELECT (SELECT count(*) FROM made) + (SELECT count(*) FROM orphans) AS n, '' AS note),
flagged AS (
	SELECT company_id, id::text AS ref, format('the %s has no journal entry of its company, date and source', label) AS detail
	  FROM named
	 WHERE found IS NULL OR entry_company <> company_id OR entry_date <> day OR source_type <> source OR source_id <> id
	UNION ALL
	SELECT company_id, id::text, format('journal entry of source %s that nothing names', source_type) FROM orphans
	UNION ALL
	SELECT company_id, id::text, format('%s is closed, but its revenue and expense accounts still hold %s', year, money[left_over; currency]) FROM years
	UNION ALL
	SELECT company_id, id::text, format('the revaluation of %s and its reversal leave %s on account %s in %s', month, trim_scale(net), account_code, currency)
	  FROM unmirrored)`

// currenciesSQL: every currency column holds a code of $3, the
// currencies the ledger knows. One violation per company, table and code.
const currenciesSQL = `
WITH used AS (
	SELECT 'companies' AS tbl, id AS company_id, currency::text AS currency FROM companies WHERE ($1::text = '' OR id = $1)
	UNION ALL SELECT 'journal_lines', company_id, currency FROM journal_lines WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'invoices', company_id, currency FROM invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'credit_notes', company_id, currency FROM credit_notes WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'payments', company_id, currency FROM payments WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'settlements', company_id, currency FROM settlements WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'purchase_invoices', company_id, currency FROM purchase_invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'assets', company_id, currency FROM assets WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'customer_credits', company_id, currency FROM customer_credits WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'customer_credit_movements', company_id, currency FROM customer_credit_movements WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'supplier_credits', company_id, currency FROM supplier_credits WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'supplier_credit_movements', company_id, currency FROM supplier_credit_movements WHERE ($1::text = '' OR company_id = $1)
	UNION ALL SELECT 'fx_rates', company_id, currency FROM fx_rates WHERE ($1::text = '' OR company_id = $1)),
per_table AS (SELECT tbl, company_id, currency, count(*) AS rows FROM used GROUP BY 1, 2, 3),
counted AS (SELECT count(DISTINCT currency) AS n, '' AS note FROM per_table),
flagged AS (
	SELECT company_id, currency AS ref,
	       format('%s row(s) of %s are in %L, which is no ISO 4217 code the ledger knows', rows, tbl, currency) AS detail
	  FROM per_table WHERE currency <> ALL ($3::text[]))`
