package ledger_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// A body of any shape is decoded or refused with invalid_command; a field
// an error names is a path into the body, with indexes where it runs
// through arrays.
func FuzzDecode(f *testing.F) {
	f.Add(`{"order_id":"o","customer":{"id":"c","name":"C","country":"LT"},"currency":"EUR","issue_date":"2026-12-02","due_date":"2026-12-16","lines":[{"description":"x","quantity":"1","unit_price":"1.00","vat_rate":"21"},{"description":"y","quantity":2,"unit_price":"1","vat_rate":"21"}]}`)
	f.Add(`{"order_id":"o","customer":{"id":"c","name":"C","vat_id":"DE123456789","country":"DE"},"currency":"EUR","issue_date":"2026-12-02","due_date":"2026-12-16","lines":[{"description":"x","quantity":"1","unit_price":"1.00","vat_rate":"0","vat_treatment":"intra_eu_goods"},{"description":"y","quantity":"1","unit_price":"1","vat_rate":"0","vat_treatment":"PVM13"}]}`)
	f.Add(`{"lines":[{},[],"x",{"unit_price":{"a":1}}]}`)
	f.Add(`{"LINES":[{"Unit_Price":1}]}`)
	f.Add(`{"customer":[{"name":1}]}`)
	f.Add(`[]`)
	path := regexp.MustCompile(`^(body|[a-z0-9_]+(\[[0-9]+\])*(\.[a-z0-9_]+(\[[0-9]+\])*)*)$`)
	f.Fuzz(func(t *testing.T, body string) {
		_, err := ledger.Decode("invoice.create", []byte(body))
		if err == nil {
			return
		}
		var e *ledger.Error
		if !errors.As(err, &e) || e.Code != ledger.CodeInvalidCommand {
			t.Fatalf("%q: %v", body, err)
		}
		if field, ok := e.Details["field"].(string); ok && !path.MatchString(field) && !containsNUL(field) {
			t.Fatalf("%q: field %q is not a path", body, field)
		}
	})
}

func containsNUL(s string) bool {
	for _, r := range s {
		if r == 0 {
			return true
		}
	}
	return false
}
