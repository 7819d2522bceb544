package bench

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

const (
	refSlot    = "@ref@"
	numberSlot = "@number@"
)

// newPaymentTemplate is the payment.record body: one bank transfer paying
// one invoice in full, allocated by its number. Every bench invoice has
// the same total, so the amount is fixed.
func newPaymentTemplate(amount string) (template, error) {
	return newTemplate(map[string]any{
		"payment_ref": refSlot,
		"customer_id": benchCustomer,
		"received_on": "2026-12-03",
		"method":      "bank",
		"currency":    "EUR",
		"amount":      amount,
		"allocations": []map[string]string{{"invoice_number": numberSlot, "amount": amount}},
	}, refSlot, numberSlot)
}

// unpaid is an invoice a payment phase can pay.
type unpaid struct{ company, number string }

// Payments measures payment.record at its peak: n payments, as fast as
// JetStream takes them, through group commit, each paying one invoice the
// earlier phases created, interleaved over the companies as the invoices
// were. Payments of one company read and change the same customer's
// balance, so they share their transaction's pass in order.
func (e *Env) Payments(ctx context.Context, name string, n int) (Phase, error) {
	rows, err := e.pool.Query(ctx, `
		SELECT company_id, number, gross FROM invoices i
		 WHERE company_id = ANY ($1)
		   AND NOT EXISTS (SELECT FROM payment_allocations a WHERE a.invoice_id = i.id)
		 ORDER BY sequence, company_id
		 LIMIT $2`, e.companies, n)
	if err != nil {
		return Phase{Name: name}, fmt.Errorf("%s: open invoices: %w", name, err)
	}
	var open []unpaid
	var total decimal.Decimal
	for rows.Next() {
		var u unpaid
		var gross decimal.Decimal
		if err := rows.Scan(&u.company, &u.number, &gross); err != nil {
			rows.Close()
			return Phase{Name: name}, err
		}
		if len(open) == 0 {
			total = gross
		} else if !gross.Equal(total) {
			rows.Close()
			return Phase{Name: name}, fmt.Errorf("%s: invoice %s of %s totals %s, the others %s", name, u.number, u.company, gross, total)
		}
		open = append(open, u)
	}
	if err := rows.Err(); err != nil {
		return Phase{Name: name}, err
	}
	if len(open) < n {
		return Phase{Name: name}, fmt.Errorf("%s: %d open invoices to pay, %d payments asked for", name, len(open), n)
	}
	tmpl, err := newPaymentTemplate(total.StringFixed(2))
	if err != nil {
		return Phase{Name: name}, err
	}
	subjects := make(map[string]string, len(e.companies))
	for _, c := range e.companies {
		subjects[c] = protocol.CommandSubject(c, new(ledger.RecordPayment).CommandName())
	}
	load := workload{sent: &e.paid, message: func(i int, key string) (string, []byte) {
		u := open[i]
		return subjects[u.company], tmpl.body(key, u.number)
	}}
	return e.peak(ctx, name, e.cfg.groupMode(), load, n)
}
