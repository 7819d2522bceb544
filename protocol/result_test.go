package protocol_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/protocol"
)

// A fresh result's encoding is json.Marshal's, byte for byte, whatever
// its strings hold (quotes, the key names themselves, HTML, invalid
// UTF-8) and whatever JSON its result is.
func TestEncodeFreshIsJSONMarshal(t *testing.T) {
	value := rapid.Deferred(func() *rapid.Generator[any] {
		return rapid.OneOf(
			rapid.Just[any](nil),
			rapid.Map(rapid.Bool(), func(b bool) any { return b }),
			rapid.Map(rapid.Int64(), func(n int64) any { return n }),
			rapid.Map(rapid.String(), func(s string) any { return s }),
			rapid.Map(rapid.SliceOfN(rapid.String(), 0, 3), func(s []string) any { return s }),
			rapid.Map(rapid.MapOfN(rapid.String(), rapid.String(), 0, 3), func(m map[string]string) any { return m }),
		)
	})
	text := rapid.OneOf(rapid.String(), rapid.SampledFrom([]string{`,"replayed":`, `","replayed":true,"x":"`, `<&>`, "\xff\xfe", `\"`, ""}))
	rapid.Check(t, func(t *rapid.T) {
		raw, err := json.Marshal(value.Draw(t, "result"))
		if err != nil {
			t.Fatal(err)
		}
		r := protocol.Result{
			Company:        text.Draw(t, "company"),
			IdempotencyKey: text.Draw(t, "key"),
			Command:        text.Draw(t, "command"),
			Status:         rapid.SampledFrom([]string{protocol.StatusOK, protocol.StatusError}).Draw(t, "status"),
			Result:         raw,
			Replayed:       rapid.Bool().Draw(t, "replayed"),
			Interim:        rapid.Bool().Draw(t, "interim"),
		}
		if rapid.Bool().Draw(t, "error") {
			r.Error = &protocol.ResultError{Code: "invalid_command", Message: text.Draw(t, "message")}
		}
		got, err := protocol.EncodeFresh(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("EncodeFresh\n  %s\njson.Marshal\n  %s", got, want)
		}
	})
}

// go test -run '^$' -bench EncodeResult ./protocol
func BenchmarkEncodeResult(b *testing.B) {
	result := map[string]any{"id": "0193a5c2-7d4e-7b1a-9c3f-2a6b8e1d4f70", "number": "INV-2026-000123", "lines": []map[string]string{
		{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21", "net": "300.00", "vat": "63.00", "gross": "363.00"},
		{"description": "Accommodation", "quantity": "2", "unit_price": "12.50", "vat_rate": "12", "net": "25.00", "vat": "3.00", "gross": "28.00"},
		{"description": "Travel", "quantity": "1", "unit_price": "80.00", "vat_rate": "0", "net": "80.00", "vat": "0.00", "gross": "80.00"},
	}, "net": "405.00", "vat": "66.00", "gross": "471.00", "currency": "EUR", "issue_date": "2026-12-07", "due_date": "2027-01-06"}
	raw, err := json.Marshal(result)
	if err != nil {
		b.Fatal(err)
	}
	r := protocol.Result{Company: "acme", IdempotencyKey: "order-123", Command: "invoice.create", Status: protocol.StatusOK, Result: raw}
	b.Run("json.Marshal", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodeFresh", func(b *testing.B) {
		for range b.N {
			if _, err := protocol.EncodeFresh(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
