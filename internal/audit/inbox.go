package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/consumer/inbox"
)

// effectsSQL defines the two sides the inbox checks match:
//
//   - kinds: which command creates which document, and the field of the
//     command's stored result that holds the document's reference (the json
//     tags of the ledger's and webhooks' *View structs);
//   - documents(company_id, command, ref, created_at): every document, under
//     the command that creates it; an asset is referenced by its asset_id
//     (asset_ref), everything else by its ID;
//   - keys(company_id, idempotency_key, command, noun, field, ref): every
//     successful key with the reference read from its stored result
//     (null when the result has no such field).
//
// Both sides are matched on (company, command, ref) with hash anti-joins:
// no per-row lookups, whatever the table sizes. Both are materialized, so
// that the planner cannot turn an anti-join into a lookup per row, which
// reads every key of a company (and parses its result) for each of its
// documents.
var effectsSQL = `
WITH kinds (command, noun, field) AS (VALUES
	('company.create', 'company', 'id'),
	('invoice.create', 'invoice', 'invoice_id'),
	('credit_note.create', 'credit note', 'credit_note_id'),
	('payment.record', 'payment', 'payment_id'),
	('settlement.record', 'settlement', 'settlement_id'),
	('purchase_invoice.record', 'purchase invoice', 'purchase_invoice_id'),
	('purchase_credit_note.record', 'purchase credit note', 'purchase_credit_note_id'),
	('purchase_invoice.reverse', 'purchase reversal', 'purchase_reversal_id'),
	('supplier_payment.record', 'supplier payment', 'supplier_payment_id'),
	('journal_entry.record', 'manual journal entry', 'manual_journal_id'),
	('asset.register', 'asset', 'asset_id'),
	('depreciation.run', 'depreciation run', 'depreciation_run_id'),
	('customer_credit.apply', 'credit application', 'application_id'),
	('customer_credit.refund', 'credit refund', 'refund_id'),
	('supplier_credit.apply', 'supplier credit application', 'application_id'),
	('supplier_credit.refund', 'supplier credit refund', 'refund_id'),
	('period.close', 'month close', 'close_id'),
	('year.close', 'year close', 'year_close_id'),
	('opening_balances.record', 'opening', 'opening_balances_id'),
	('fx_rate.record', 'exchange rate', 'fx_rate_id'),
	('fx.revalue', 'fx revaluation', 'revaluation_id'),
	('webhook_endpoint.create', 'webhook endpoint', 'endpoint_id')),
documents (company_id, command, ref, created_at) AS MATERIALIZED (
	SELECT id, 'company.create', id, created_at FROM companies WHERE ($1::text = '' OR id = $1)
	UNION ALL
	SELECT company_id, 'invoice.create', id::text, created_at FROM invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'credit_note.create', id::text, created_at FROM credit_notes WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'payment.record', id::text, created_at FROM payments WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'settlement.record', id::text, created_at FROM settlements WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, CASE WHEN credits_invoice_id IS NULL THEN 'purchase_invoice.record' ELSE 'purchase_credit_note.record' END,
	       id::text, created_at FROM purchase_invoices WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'purchase_invoice.reverse', id::text, created_at FROM purchase_reversals WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'supplier_payment.record', id::text, created_at FROM supplier_payments WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'journal_entry.record', id::text, created_at FROM manual_journals WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'asset.register', asset_ref, created_at FROM assets WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'depreciation.run', id::text, created_at FROM depreciation_runs WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, CASE kind WHEN 'application' THEN 'customer_credit.apply' ELSE 'customer_credit.refund' END, id::text, created_at
	  FROM customer_credit_movements WHERE kind IN ('application', 'refund') AND ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, CASE kind WHEN 'application' THEN 'supplier_credit.apply' ELSE 'supplier_credit.refund' END, id::text, created_at
	  FROM supplier_credit_movements WHERE kind IN ('application', 'refund') AND ($1::text = '' OR company_id = $1)
	UNION ALL
	-- The month an opening closes is the opening's, under its key.
	SELECT p.company_id, 'period.close', p.id::text, p.closed_at FROM period_closes p
	 WHERE ($1::text = '' OR p.company_id = $1)
	   AND NOT EXISTS (SELECT 1 FROM opening_balances o WHERE o.company_id = p.company_id AND o.idempotency_key = p.idempotency_key)
	UNION ALL
	SELECT company_id, 'year.close', id::text, created_at FROM year_closes WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'opening_balances.record', id::text, created_at FROM opening_balances WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'fx_rate.record', id::text, created_at FROM fx_rates WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'fx.revalue', id::text, created_at FROM fx_revaluations WHERE ($1::text = '' OR company_id = $1)
	UNION ALL
	SELECT company_id, 'webhook_endpoint.create', id::text, created_at FROM webhook_endpoints WHERE ($1::text = '' OR company_id = $1)),
keys AS MATERIALIZED (
	SELECT i.company_id, i.idempotency_key, i.command, k.noun, k.field,
	       nullif(i.outcome ->> k.field, '') AS ref
	  FROM (` + successfulKeys + `) AS i JOIN kinds AS k ON k.command = i.command)`

// successfulKeys are the inbox's successful keys of the company $1 (all
// when ”).
var successfulKeys = inbox.SuccessfulKeys("$1")

// inboxSQL runs both inbox checks on one reading of their sides, which
// costs most of either (every key's stored result is parsed): counted and
// flagged are inbox_effects', recent_counted and recent_flagged
// effects_inbox'.
//
// inbox_effects flags successful keys whose document is missing, and
// documents that more than one key claims; effects_inbox flags documents
// created at or after the horizon ($3) without a successful key naming
// them.
var inboxSQL = effectsSQL + `,
counted AS (SELECT count(*) AS n, '' AS note FROM keys),
flagged AS (
	SELECT company_id, idempotency_key AS ref,
	       format('%s succeeded but its stored result has no %s', command, field) AS detail
	  FROM keys AS k
	 WHERE ref IS NULL
	UNION ALL
	SELECT company_id, idempotency_key, format('%s succeeded with %s %s, which does not exist', command, noun, ref)
	  FROM keys AS k
	 WHERE ref IS NOT NULL
	   AND NOT EXISTS (SELECT 1 FROM documents AS d
	                    WHERE d.company_id = k.company_id AND d.command = k.command AND d.ref = k.ref)
	UNION ALL
	SELECT company_id, min(idempotency_key),
	       format('%s %s is claimed by %s keys: %s', min(noun), ref, count(*),
	              left(string_agg(idempotency_key, ', ' ORDER BY idempotency_key), 200))
	  FROM keys
	 WHERE ref IS NOT NULL
	 GROUP BY company_id, command, ref
	HAVING count(*) > 1),
recent AS (SELECT * FROM documents WHERE $3::timestamptz IS NOT NULL AND created_at >= $3),
recent_counted AS (SELECT count(*) AS n, $4::text AS note FROM recent),
recent_flagged AS (
	SELECT d.company_id, d.ref,
	       format('%s %s was created at %s and has no idempotency key, though keys are kept from %s',
	              k.noun, d.ref, d.created_at, $3::timestamptz) AS detail
	  FROM recent AS d JOIN kinds AS k ON k.command = d.command
	 WHERE NOT EXISTS (SELECT 1 FROM keys
	                    WHERE keys.company_id = d.company_id AND keys.command = d.command AND keys.ref = d.ref))`

// inboxChecks runs inbox_effects and, with it, effects_inbox.
func inboxChecks(ctx context.Context, a *auditor, name string) (CheckResult, error) {
	horizon := a.report.Stats.InboxHorizon
	note := ""
	if horizon != nil {
		note = fmt.Sprintf("documents from %s on (the oldest stored key)", horizon.UTC().Format(time.RFC3339Nano))
	}
	res, err := a.flaggedEach(ctx, []string{name, CheckEffectsInbox}, inboxSQL, horizon, note)
	if err != nil {
		return CheckResult{}, err
	}
	if horizon == nil {
		// Without a single key there is no telling a purged key from a
		// missing one.
		res[1] = CheckResult{Note: "skipped: no idempotency key is stored"}
	}
	a.also = append(a.also, res[1])
	return res[0], nil
}
