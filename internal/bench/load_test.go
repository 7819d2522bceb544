package bench

import (
	"encoding/json"
	"testing"
)

func TestTemplateFillsSlotsWhereverEncodingPutsThem(t *testing.T) {
	t.Parallel()
	// json.Marshal sorts map keys, so the slots appear in the text in
	// another order than they are given.
	tmpl, err := newPaymentTemplate("471.00")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Ref         string `json:"payment_ref"`
		Amount      string `json:"amount"`
		Allocations []struct {
			Number string `json:"invoice_number"`
			Amount string `json:"amount"`
		} `json:"allocations"`
	}
	if err := json.Unmarshal(tmpl.body("key-7", "INV-2026-000042"), &got); err != nil {
		t.Fatal(err)
	}
	if got.Ref != "key-7" || got.Amount != "471.00" || len(got.Allocations) != 1 ||
		got.Allocations[0].Number != "INV-2026-000042" || got.Allocations[0].Amount != "471.00" {
		t.Fatalf("payment body %+v", got)
	}

	if _, err := newTemplate(map[string]string{"a": "@x@", "b": "@x@"}, "@x@"); err == nil {
		t.Fatal("a slot that appears twice was accepted")
	}
	if _, err := newTemplate(map[string]string{"a": "@x@"}, "@y@"); err == nil {
		t.Fatal("a missing slot was accepted")
	}
}
