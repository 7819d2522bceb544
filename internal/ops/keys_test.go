package ops_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

func TestInspectKey(t *testing.T) {
	t.Parallel()
	pool, books := booksDB(t)
	ctx := context.Background()

	k, err := ops.InspectKey(ctx, pool, ops.KeyRef{Company: "acme", Key: "inv-1"})
	if err != nil {
		t.Fatal(err)
	}
	var fingerprint []byte
	if err := pool.QueryRow(ctx, `SELECT fingerprint FROM inbox WHERE company_id = 'acme' AND idempotency_key = 'inv-1'`).Scan(&fingerprint); err != nil {
		t.Fatal(err)
	}
	// The stored result is the reply every repeat gets: the invoice.
	var stored protocol.Result
	var inv ledger.InvoiceView
	if err := json.Unmarshal(k.Result, &stored); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stored.Result, &inv); err != nil {
		t.Fatalf("the stored result is not the invoice: %v\n%s", err, k.Result)
	}
	if k.Company != "acme" || k.IdempotencyKey != "inv-1" || k.Command != "invoice.create" || k.Status != protocol.StatusOK ||
		stored.IdempotencyKey != "inv-1" ||
		k.Fingerprint != hex.EncodeToString(fingerprint) || k.StreamSequence != nil || k.CreatedAt.IsZero() ||
		inv.Number != "INV-2026-000001" || inv.InvoiceID != books.Field(t, "acme", "inv-1", "invoice_id") {
		t.Fatalf("key inv-1: %+v\nresult %s", k, k.Result)
	}

	// A key as a producer quotes it names the same key.
	quoted, err := ops.InspectKey(ctx, pool, ops.KeyRef{Company: "acme", Key: `"inv-1"`})
	if err != nil || quoted.Fingerprint != k.Fingerprint {
		t.Fatalf(`"inv-1": %+v %v`, quoted, err)
	}

	// A failed command's key stores its error result.
	dup, err := ops.InspectKey(ctx, pool, ops.KeyRef{Company: "acme", Key: "dup-order"})
	if err != nil {
		t.Fatal(err)
	}
	var res protocol.Result
	if err := json.Unmarshal(dup.Result, &res); err != nil {
		t.Fatal(err)
	}
	if dup.Status != protocol.StatusError || res.Error == nil || res.Error.Code != ledger.CodeDuplicateDocument {
		t.Fatalf("dup-order: %+v, result %+v", dup, res)
	}

	_, err = ops.InspectKey(ctx, pool, ops.KeyRef{Company: "acme", Key: "never-sent"})
	if !errors.Is(err, ops.ErrNotFound) || ops.ErrorCode(err) != ops.CodeNotFound || errors.Is(err, ops.ErrInvalid) ||
		!strings.Contains(err.Error(), `no result is stored for key "never-sent" of company "acme"`) {
		t.Fatalf("an unknown key: %v", err)
	}
	// Another company's key of the same name is not this one's.
	if _, err := ops.InspectKey(ctx, pool, ops.KeyRef{Company: "beta", Key: "inv-2"}); !errors.Is(err, ops.ErrNotFound) {
		t.Fatalf("beta's inv-2: %v", err)
	}

	for _, ref := range []ops.KeyRef{{Company: "acme", Key: `"inv"1"`}, {Company: "", Key: "inv-1"}, {Company: "acme"}} {
		if err := ref.Validate(); !errors.Is(err, ops.ErrInvalid) {
			t.Errorf("Validate(%+v) = %v, want an invalid request", ref, err)
		}
		_, err := ops.InspectKey(ctx, pool, ref)
		var e *ops.Error
		if !errors.As(err, &e) || e.Code != ops.CodeInvalid || e.Field == "" {
			t.Errorf("InspectKey(%+v) = %v, want an invalid request naming its field", ref, err)
		}
	}
}
