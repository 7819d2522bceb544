package audit

// The books: double entry and gapless numbering. Each query is a flagged
// query (see flaggedTail); $1 is the company filter, empty for all.

const trialBalanceSQL = `
WITH totals AS (
	SELECT company_id, currency, sum(debit) AS debits, sum(credit) AS credits
	  FROM journal_lines
	 WHERE ($1::text = '' OR company_id = $1)
	 GROUP BY company_id, currency),
counted AS (SELECT count(*) AS n, '' AS note FROM totals),
flagged AS (
	SELECT company_id, currency::text AS ref,
	       format('the %s trial balance does not net to zero: debits %s, credits %s, difference %s',
	              currency, trim_scale(debits), trim_scale(credits), trim_scale(debits - credits)) AS detail
	  FROM totals
	 WHERE debits <> credits)`

// journalEntriesSQL groups lines per entry and currency once, then joins
// the entries both ways: an entry without lines and lines without an entry
// are both broken.
const journalEntriesSQL = `
WITH per_currency AS (
	SELECT entry_id, min(company_id) AS company_id, currency, count(*) AS lines,
	       sum(debit) AS debits, sum(credit) AS credits
	  FROM journal_lines
	 WHERE ($1::text = '' OR company_id = $1)
	 GROUP BY entry_id, currency),
per_entry AS (
	SELECT entry_id, min(company_id) AS company_id, sum(lines) AS lines,
	       string_agg(format('%s debits %s, credits %s', currency, trim_scale(debits), trim_scale(credits)), '; '
	                  ORDER BY currency) FILTER (WHERE debits <> credits) AS unbalanced
	  FROM per_currency
	 GROUP BY entry_id),
entries AS (
	SELECT coalesce(e.company_id, p.company_id) AS company_id, coalesce(e.id, p.entry_id) AS id,
	       coalesce(p.lines, 0) AS lines, p.unbalanced, e.id IS NULL AS orphaned
	  FROM (SELECT id, company_id FROM journal_entries WHERE ($1::text = '' OR company_id = $1)) AS e
	  FULL JOIN per_entry AS p ON p.entry_id = e.id),
counted AS (SELECT count(*) FILTER (WHERE NOT orphaned) AS n, '' AS note FROM entries),
flagged AS (
	SELECT company_id, id::text AS ref,
	       concat_ws('; ',
	           CASE WHEN orphaned THEN format('%s journal line(s) belong to no journal entry', lines) END,
	           CASE WHEN NOT orphaned AND lines < 2 THEN format('the entry has %s line(s); an entry needs at least 2', lines) END,
	           CASE WHEN unbalanced IS NOT NULL THEN 'the entry does not balance: ' || unbalanced END) AS detail
	  FROM entries
	 WHERE orphaned OR lines < 2 OR unbalanced IS NOT NULL)`

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
