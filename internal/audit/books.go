package audit

import (
	"strings"

	"github.com/onceledger/onceledger/ledger"
)

// The books: double entry and gapless numbering. Each query is a flagged
// query (see flaggedTail); $1 is the company filter, empty for all.

// The trial balance nets to zero per document currency and, over all of
// them, in the company's currency (a line without company amounts counts
// its own; see journalEntriesSQL).
const trialBalanceSQL = `
WITH totals AS (
	SELECT company_id, currency::text AS currency, sum(debit) AS debits, sum(credit) AS credits
	  FROM journal_lines
	 WHERE ($1::text = '' OR company_id = $1)
	 GROUP BY company_id, currency
	UNION ALL
	SELECT l.company_id, 'company currency ' || min(c.currency), sum(coalesce(l.debit_company, l.debit)), sum(coalesce(l.credit_company, l.credit))
	  FROM journal_lines l JOIN companies c ON c.id = l.company_id
	 WHERE ($1::text = '' OR l.company_id = $1)
	 GROUP BY l.company_id),
counted AS (SELECT count(*) AS n, '' AS note FROM totals),
flagged AS (
	SELECT company_id, currency AS ref,
	       format('the %s trial balance does not net to zero: debits %s, credits %s, difference %s',
	              currency, money[debits; currency], money[credits; currency], money[debits - credits; currency]) AS detail
	  FROM totals
	 WHERE debits <> credits)`

// journalEntriesSQL groups lines per entry and currency once, then joins
// the entries both ways: an entry without lines and lines without an entry
// are both broken, and so is an entry with lines of another company. Every
// entry balances in each document currency and in the company's currency;
// a line without company amounts counts its own amount in them, which is
// right in the company's currency only, so such a line in another
// currency is flagged.
const journalEntriesSQL = `
WITH per_currency AS (
	SELECT entry_id, min(company_id) AS company_id, max(company_id) AS last_company, currency, count(*) AS lines,
	       sum(debit) AS debits, sum(credit) AS credits,
	       sum(coalesce(debit_company, debit)) AS company_debits, sum(coalesce(credit_company, credit)) AS company_credits,
	       count(*) FILTER (WHERE debit_company IS NULL OR credit_company IS NULL) AS unconverted
	  FROM journal_lines
	 WHERE ($1::text = '' OR company_id = $1)
	 GROUP BY entry_id, currency),
per_entry AS (
	SELECT p.entry_id, min(p.company_id) AS company_id, max(p.last_company) AS last_company, sum(p.lines) AS lines,
	       concat_ws('; ',
	           string_agg(format('%s debits %s, credits %s', p.currency, money[p.debits; p.currency], money[p.credits; p.currency]), '; '
	                      ORDER BY p.currency) FILTER (WHERE p.debits <> p.credits),
	           CASE WHEN sum(p.company_debits) <> sum(p.company_credits)
	                THEN format('in the company''s currency debits %s, credits %s', money[sum(p.company_debits); min(c.currency)], money[sum(p.company_credits); min(c.currency)]) END,
	           string_agg(format('%s line(s) in %s have no amounts in the company''s currency %s', p.unconverted, p.currency, c.currency), '; ')
	               FILTER (WHERE p.unconverted > 0 AND upper(p.currency) <> c.currency)) AS unbalanced
	  FROM per_currency p LEFT JOIN companies c ON c.id = p.company_id
	 GROUP BY p.entry_id),
entries AS (
	SELECT coalesce(e.company_id, p.company_id) AS company_id, coalesce(e.id, p.entry_id) AS id,
	       coalesce(p.lines, 0) AS lines, p.unbalanced, e.id IS NULL AS orphaned,
	       CASE WHEN p.company_id <> e.company_id THEN p.company_id
	            WHEN p.last_company <> e.company_id THEN p.last_company END AS foreign_company
	  FROM (SELECT id, company_id FROM journal_entries WHERE ($1::text = '' OR company_id = $1)) AS e
	  FULL JOIN per_entry AS p ON p.entry_id = e.id),
counted AS (SELECT count(*) FILTER (WHERE NOT orphaned) AS n, '' AS note FROM entries),
flagged AS (
	SELECT company_id, id::text AS ref,
	       concat_ws('; ',
	           CASE WHEN orphaned THEN format('%s journal line(s) belong to no journal entry', lines) END,
	           CASE WHEN NOT orphaned AND lines < 2 THEN format('the entry has %s line(s); an entry needs at least 2', lines) END,
	           CASE WHEN unbalanced <> '' THEN 'the entry does not balance: ' || unbalanced END,
	           CASE WHEN foreign_company IS NOT NULL THEN format('the entry is of company %s but has lines of company %s', company_id, foreign_company) END) AS detail
	  FROM entries
	 WHERE orphaned OR lines < 2 OR unbalanced <> '' OR foreign_company IS NOT NULL)`

// numberSeriesSQL compares each series' documents with its counter. Within
// a series ordered by sequence, step is the distance from the previous
// document (from 0 for the first): 1 everywhere means 1..n, 0 is a repeat,
// more than 1 a gap. The counter must then equal the highest sequence.
const numberSeriesSQL = `
WITH documents AS (
	SELECT company_id, series, sequence FROM invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, series, sequence FROM credit_notes WHERE ($1::text = '' OR company_id = $1)),
steps AS (
	SELECT company_id, series, sequence,
	       sequence - lag(sequence, 1, 0::bigint) OVER (PARTITION BY company_id, series ORDER BY sequence) AS step
	  FROM documents),
per_series AS (
	SELECT company_id, series, count(*) AS documents, max(sequence) AS highest,
	       coalesce(sum(step - 1) FILTER (WHERE step > 1), 0) AS missing,
	       left(string_agg(CASE WHEN step = 2 THEN (sequence - 1)::text
	                            ELSE format('%s-%s', sequence - step + 1, sequence - 1) END, ', '
	                       ORDER BY sequence) FILTER (WHERE step > 1), 200) AS gaps,
	       count(*) FILTER (WHERE step = 0) AS repeats,
	       left(string_agg(sequence::text, ', ' ORDER BY sequence) FILTER (WHERE step = 0), 200) AS repeated
	  FROM steps
	 GROUP BY company_id, series),
series AS (
	SELECT coalesce(s.company_id, p.company_id) AS company_id, coalesce(s.series, p.series) AS series,
	       s.last_value, coalesce(p.documents, 0) AS documents, coalesce(p.highest, 0) AS highest,
	       coalesce(p.missing, 0) AS missing, p.gaps, coalesce(p.repeats, 0) AS repeats, p.repeated
	  FROM (SELECT company_id, series, last_value FROM number_series WHERE ($1::text = '' OR company_id = $1)) AS s
	  FULL JOIN per_series AS p ON p.company_id = s.company_id AND p.series = s.series),
counted AS (SELECT count(*) AS n, '' AS note FROM series),
flagged AS (
	SELECT company_id, series AS ref,
	       concat_ws('; ',
	           CASE WHEN last_value IS NULL THEN format('%s document(s) are numbered in a series that does not exist', documents) END,
	           CASE WHEN missing > 0 THEN format('%s number(s) missing: %s', missing, gaps) END,
	           CASE WHEN repeats > 0 THEN format('number(s) used more than once: %s', repeated) END,
	           CASE WHEN last_value > highest THEN format('the counter is at %s but the highest document is %s: %s burnt',
	                                                      last_value, highest,
	                                                      CASE WHEN last_value = highest + 1 THEN format('number %s was', last_value)
	                                                           ELSE format('numbers %s-%s were', highest + 1, last_value) END) END,
	           CASE WHEN last_value < highest THEN format('the counter is at %s but documents are numbered up to %s: the next number would be reused',
	                                                      last_value, highest) END) AS detail
	  FROM series
	 WHERE last_value IS NULL OR missing > 0 OR repeats > 0 OR last_value <> highest)`

// Receivables and customer credits: what each document posted to account
// 1200 (2200) is compared with what the document itself says it owes (is
// owed), so a difference names the document that made it. Per company and
// currency, the account then equals the open invoices (the customers'
// credits): the documents' amounts add up to exactly those.

// receivablesSQL: an invoice adds its gross; a credit note takes what it
// did not move to the customer's credit; a payment takes what it applied;
// an application of credit (to an invoice or to an opening's receivable)
// takes its amount; an opening adds its open receivables. Nothing else
// posts to 1200.
const receivablesSQL = `
WITH posted AS (
	SELECT l.company_id, l.currency::text AS currency, e.source_type, e.source_id, min(e.entry_date) AS day,
	       sum(l.debit - l.credit) AS amount
	  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
	 WHERE l.account_code = '` + ledger.AccountReceivables + `' AND ($1::text = '' OR l.company_id = $1)
	 GROUP BY 1, 2, 3, 4),
said AS (
	SELECT company_id, currency::text AS currency, 'invoice' AS source_type, id AS source_id, issue_date AS day, gross AS amount, number AS label
	  FROM invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT c.company_id, c.currency::text, 'credit_note', c.id, c.issue_date,
	       -(c.gross - coalesce((SELECT sum(m.amount) FROM customer_credit_movements m WHERE m.kind = 'credit_note' AND m.source_id = c.id), 0)),
	       c.number
	  FROM credit_notes c WHERE ($1::text = '' OR c.company_id = $1)
	UNION ALL
	SELECT company_id, currency::text, 'payment', id, received_on, -(amount - unapplied), payment_ref
	  FROM payments WHERE amount > unapplied AND ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, currency::text, 'customer_credit_application', id, entry_date, amount, 'of ' || customer_id
	  FROM customer_credit_movements WHERE kind = 'application' AND ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT o.company_id, o.currency::text, 'opening_balances', o.opening_id, min(b.opened_on), sum(o.amount), 'opening'
	  FROM opening_items o JOIN opening_balances b ON b.id = o.opening_id
	 WHERE o.kind = 'receivable' AND ($1::text = '' OR o.company_id = $1)
	 GROUP BY 1, 2, 3, 4),
documents AS (
	SELECT coalesce(p.company_id, s.company_id) AS company_id, coalesce(p.currency, s.currency) AS currency,
	       coalesce(p.source_type, s.source_type) AS source_type, coalesce(p.source_id, s.source_id) AS source_id,
	       coalesce(s.day, p.day) AS day, s.label, coalesce(p.amount, 0) AS posted, coalesce(s.amount, 0) AS said
	  FROM posted p FULL JOIN said s ON s.source_type = p.source_type AND s.source_id = p.source_id AND s.currency = p.currency),
-- Computed once: a lateral join on documents itself would compute it
-- again for every total.
differing AS MATERIALIZED (SELECT * FROM documents WHERE posted <> said),
-- What settled each invoice, gathered per invoice in one pass over each
-- table (hash joins, not a lookup per invoice).
note_credits AS (
	SELECT source_id, sum(amount) AS amount FROM customer_credit_movements
	 WHERE kind = 'credit_note' AND ($1::text = '' OR company_id = $1) GROUP BY 1),
credited AS (
	SELECT n.invoice_id, sum(n.gross) AS amount,
	       sum(coalesce(n.receivable_company, n.gross - coalesce(nc.amount, 0))) AS company
	  FROM credit_notes n LEFT JOIN note_credits nc ON nc.source_id = n.id
	 WHERE ($1::text = '' OR n.company_id = $1) GROUP BY 1),
allocated AS (
	SELECT invoice_id, sum(amount) AS amount, sum(coalesce(amount_company, amount)) AS company
	  FROM payment_allocations
	 WHERE ($1::text = '' OR payment_id IN (SELECT id FROM payments WHERE company_id = $1)) GROUP BY 1),
moved AS (
	SELECT invoice_id, sum(amount) AS amount,
	       sum(coalesce(invoice_company, -amount)) FILTER (WHERE kind = 'application') AS applied_company
	  FROM customer_credit_movements
	 WHERE invoice_id IS NOT NULL AND ($1::text = '' OR company_id = $1) GROUP BY 1),
converted AS (
	SELECT invoice_id, sum(net_company + vat_company) AS gross
	  FROM invoice_lines
	 WHERE invoice_id IN (SELECT id FROM invoices WHERE exchange_rate IS NOT NULL AND ($1::text = '' OR company_id = $1))
	 GROUP BY 1),
settled AS (
	SELECT i.company_id, i.currency::text AS currency,
	       i.gross - coalesce(c.amount, 0) - coalesce(a.amount, 0) + coalesce(m.amount, 0) AS open,
	       -- In the company's currency: an invoice's gross there (its
	       -- converted lines' for one in another currency) less what
	       -- settlements relieved it by; rows without company amounts
	       -- count their own.
	       CASE WHEN i.exchange_rate IS NULL THEN i.gross ELSE v.gross END
	           - coalesce(c.company, 0) - coalesce(a.company, 0) - coalesce(m.applied_company, 0) AS open_company
	  FROM invoices i
	  LEFT JOIN credited c ON c.invoice_id = i.id
	  LEFT JOIN allocated a ON a.invoice_id = i.id
	  LEFT JOIN moved m ON m.invoice_id = i.id
	  LEFT JOIN converted v ON v.invoice_id = i.id
	 WHERE ($1::text = '' OR i.company_id = $1)
	UNION ALL
	-- The previous books' open invoices, which the opening posted at
	-- what those books carried them at, less what payments and
	-- customers' credits applied (relieving them by amount_company and
	-- invoice_company).
	SELECT o.company_id, o.currency::text, o.amount - coalesce(sum(a.amount), 0), o.amount_company - coalesce(sum(a.amount_company), 0)
	  FROM opening_items o
	  LEFT JOIN (SELECT opening_item_id, amount, amount_company FROM opening_allocations
	             UNION ALL
	             SELECT opening_item_id, -amount, invoice_company FROM customer_credit_movements
	              WHERE opening_item_id IS NOT NULL AND ($1::text = '' OR company_id = $1)) a ON a.opening_item_id = o.id
	 WHERE o.kind = 'receivable' AND ($1::text = '' OR o.company_id = $1)
	 GROUP BY o.id),
open AS (SELECT company_id, currency, sum(open) AS amount FROM settled GROUP BY 1, 2),
open_company AS (
	SELECT s.company_id, 'company currency ' || min(c.currency) AS currency, sum(s.open_company) AS amount
	  FROM settled s JOIN companies c ON c.id = s.company_id
	 GROUP BY 1),
account_company AS (
	SELECT l.company_id, 'company currency ' || min(c.currency) AS currency,
	       sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)) AS amount
	  FROM journal_lines l JOIN companies c ON c.id = l.company_id
	 WHERE l.account_code = '` + ledger.AccountReceivables + `' AND ($1::text = '' OR l.company_id = $1)
	 GROUP BY 1),
totals AS (
	SELECT coalesce(a.company_id, o.company_id) AS company_id, coalesce(a.currency, o.currency) AS currency,
	       coalesce(a.amount, 0) AS account, coalesce(o.amount, 0) AS open
	  FROM (SELECT company_id, currency, sum(amount) AS amount FROM posted GROUP BY 1, 2) a
	  FULL JOIN open o ON o.company_id = a.company_id AND o.currency = a.currency
	UNION ALL
	SELECT coalesce(a.company_id, o.company_id), coalesce(a.currency, o.currency), coalesce(a.amount, 0), coalesce(o.amount, 0)
	  FROM account_company a FULL JOIN open_company o ON o.company_id = a.company_id),
counted AS (SELECT count(*) AS n, '' AS note FROM totals),
flagged AS (
	SELECT t.company_id, t.currency AS ref,
	       concat_ws('; ',
	           CASE WHEN t.account <> t.open THEN format('account 1200 holds %s but the open invoices sum to %s (difference %s)',
	                                                      money[t.account; t.currency], money[t.open; t.currency], money[t.account - t.open; t.currency]) END,
	           CASE WHEN d.source_id IS NOT NULL THEN format('first difference: %s %s%s of %s posted %s to 1200 where the document says %s',
	                                                          d.source_type, d.source_id, coalesce(' (' || d.label || ')', ''), d.day,
	                                                          money[d.posted; t.currency], money[d.said; t.currency]) END) AS detail
	  FROM totals t
	  LEFT JOIN LATERAL (SELECT * FROM differing d WHERE d.company_id = t.company_id AND d.currency = t.currency
	                      ORDER BY d.day, d.source_type, d.source_id LIMIT 1) d ON true
	 WHERE t.account <> t.open OR d.source_id IS NOT NULL)`

// creditsSQL: each change of a credit (a customer's, or the company's with
// a supplier) is a movement of the document that made it (an opening's
// for the credits the previous books carried), and the credit
// account holds their sum, in each currency; every party's balance is the sum of its
// movements.
func creditsSQL(c creditBook) string {
	return strings.NewReplacer("{in}", c.in, "{out}", c.out, "{account}", c.account, "{source_type}", c.sourceType,
		"{source_id}", c.sourceID, "{movements}", c.movements, "{balances}", c.balances, "{party}", c.party,
		"{credits_word}", c.creditsWord, "{party_word}", c.partyWord).Replace(`
WITH posted AS (
	SELECT l.company_id, l.currency::text AS currency, e.source_type, e.source_id, min(e.entry_date) AS day,
	       sum(l.{in} - l.{out}) AS amount
	  FROM journal_lines l JOIN journal_entries e ON e.id = l.entry_id
	 WHERE l.account_code = '{account}' AND ($1::text = '' OR l.company_id = $1)
	 GROUP BY 1, 2, 3, 4),
said AS (
	SELECT company_id, currency::text AS currency,
	       {source_type} AS source_type,
	       {source_id} AS source_id, min(entry_date) AS day, sum(amount) AS amount
	  FROM {movements} WHERE ($1::text = '' OR company_id = $1)
	 GROUP BY 1, 2, 3, 4),
documents AS (
	SELECT coalesce(p.company_id, s.company_id) AS company_id, coalesce(p.currency, s.currency) AS currency,
	       coalesce(p.source_type, s.source_type) AS source_type, coalesce(p.source_id, s.source_id) AS source_id,
	       coalesce(s.day, p.day) AS day, coalesce(p.amount, 0) AS posted, coalesce(s.amount, 0) AS said
	  FROM posted p FULL JOIN said s ON s.source_type = p.source_type AND s.source_id = p.source_id AND s.currency = p.currency),
differing AS MATERIALIZED (SELECT * FROM documents WHERE posted <> said),
parties AS (
	SELECT coalesce(b.company_id, m.company_id) AS company_id, coalesce(b.currency, m.currency) AS currency,
	       coalesce(b.{party}, m.{party}) AS {party}, coalesce(b.balance, 0) AS balance, coalesce(m.amount, 0) AS moved
	  FROM (SELECT company_id, currency::text AS currency, {party}, balance FROM {balances}
	         WHERE ($1::text = '' OR company_id = $1)) b
	  FULL JOIN (SELECT company_id, currency::text AS currency, {party}, sum(amount) AS amount FROM {movements}
	              WHERE ($1::text = '' OR company_id = $1) GROUP BY 1, 2, 3) m
	    ON m.company_id = b.company_id AND m.currency = b.currency AND m.{party} = b.{party}),
uneven AS MATERIALIZED (SELECT * FROM parties WHERE balance <> moved),
-- In the company's currency: {account} there holds what the credits' balances
-- and movements hold there (rows without company amounts count their own).
company_totals AS (
	SELECT a.company_id, 'company currency ' || a.currency AS currency, a.amount AS account, b.amount AS credits, m.amount AS moved
	  FROM (SELECT l.company_id, min(c.currency) AS currency, sum(coalesce(l.{in}_company, l.{in}) - coalesce(l.{out}_company, l.{out})) AS amount
	          FROM journal_lines l JOIN companies c ON c.id = l.company_id
	         WHERE l.account_code = '{account}' AND ($1::text = '' OR l.company_id = $1) GROUP BY 1) a
	  LEFT JOIN (SELECT company_id, sum(coalesce(balance_company, balance)) AS amount FROM {balances}
	              WHERE ($1::text = '' OR company_id = $1) GROUP BY 1) b ON b.company_id = a.company_id
	  LEFT JOIN (SELECT company_id, sum(coalesce(amount_company, amount)) AS amount FROM {movements}
	              WHERE ($1::text = '' OR company_id = $1) GROUP BY 1) m ON m.company_id = a.company_id),
totals AS (
	SELECT coalesce(a.company_id, c.company_id) AS company_id, coalesce(a.currency, c.currency) AS currency,
	       coalesce(a.amount, 0) AS account, coalesce(c.amount, 0) AS credits, coalesce(c.amount, 0) AS moved
	  FROM (SELECT company_id, currency, sum(amount) AS amount FROM posted GROUP BY 1, 2) a
	  FULL JOIN (SELECT company_id, currency, sum(balance) AS amount FROM parties GROUP BY 1, 2) c
	    ON c.company_id = a.company_id AND c.currency = a.currency
	UNION ALL
	SELECT company_id, currency, account, coalesce(credits, 0), coalesce(moved, 0) FROM company_totals),
counted AS (SELECT count(*) AS n, '' AS note FROM totals),
flagged AS (
	SELECT t.company_id, t.currency AS ref,
	       concat_ws('; ',
	           CASE WHEN t.account <> t.credits THEN format('account {account} holds %s but {credits_word} sum to %s (difference %s)',
	                                                       money[t.account; t.currency], money[t.credits; t.currency], money[t.account - t.credits; t.currency]) END,
	           CASE WHEN t.moved <> t.credits THEN format('{credits_word} sum to %s but their movements to %s',
	                                                     money[t.credits; t.currency], money[t.moved; t.currency]) END,
	           CASE WHEN d.source_id IS NOT NULL THEN format('first difference: %s %s of %s posted %s to {account} where its credit movements say %s',
	                                                          d.source_type, d.source_id, d.day, money[d.posted; t.currency], money[d.said; t.currency]) END,
	           CASE WHEN c.{party} IS NOT NULL THEN format('{party_word} %s has a credit of %s but its movements sum to %s',
	                                                            c.{party}, money[c.balance; t.currency], money[c.moved; t.currency]) END) AS detail
	  FROM totals t
	  LEFT JOIN LATERAL (SELECT * FROM differing d WHERE d.company_id = t.company_id AND d.currency = t.currency
	                      ORDER BY d.day, d.source_type, d.source_id LIMIT 1) d ON true
	  LEFT JOIN LATERAL (SELECT * FROM uneven c WHERE c.company_id = t.company_id AND c.currency = t.currency
	                      ORDER BY c.{party} LIMIT 1) c ON true
	 WHERE t.account <> t.credits OR t.moved <> t.credits OR d.source_id IS NOT NULL OR c.{party} IS NOT NULL)`)
}

// creditBook is a kind of credit creditsSQL checks: the account that holds
// it, the side of the account a credit grows on (in) and is used from
// (out), the tables of its balances and movements, the column naming the
// party, the source type and ID of the entry of each movement, and the
// words for them.
type creditBook struct {
	account, in, out, balances, movements, party, sourceType, sourceID, creditsWord, partyWord string
}

var (
	customerCreditsSQL = creditsSQL(creditBook{
		account: ledger.AccountCustomerCredits, in: "credit", out: "debit",
		balances: "customer_credits", movements: "customer_credit_movements", party: "customer_id",
		sourceType: `CASE kind WHEN 'application' THEN 'customer_credit_application' WHEN 'refund' THEN 'customer_credit_refund'
	                 WHEN 'settlement_refund' THEN 'settlement' WHEN 'opening' THEN '` + ledger.SourceOpeningBalances + `' ELSE kind END`,
		sourceID: "source_id", creditsWord: "the customers'' credits", partyWord: "customer",
	})
	// A supplier payment's movement has the payment's ID; an
	// application's or refund's is its entry's source; an opening's, one
	// of the several its entry posts, names the opening in opening_id.
	supplierCreditsSQL = creditsSQL(creditBook{
		account: ledger.AccountSupplierCredits, in: "debit", out: "credit",
		balances: "supplier_credits", movements: "supplier_credit_movements", party: "supplier_id",
		sourceType: `CASE kind WHEN 'payment' THEN 'supplier_payment' WHEN 'opening' THEN '` + ledger.SourceOpeningBalances + `'
	                 ELSE 'supplier_credit_' || kind END`,
		sourceID:    "CASE kind WHEN 'opening' THEN opening_id ELSE id END",
		creditsWord: "the credits with suppliers", partyWord: "supplier",
	})
)
