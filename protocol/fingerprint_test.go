package protocol_test

import (
	"bytes"
	"testing"

	"github.com/onceledger/onceledger/protocol"
)

const fingerprintBase = `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1}`

func fingerprint(t *testing.T, command, body string) []byte {
	t.Helper()
	fp, err := protocol.Fingerprint(command, []byte(body))
	if err != nil {
		t.Fatalf("Fingerprint(%q, %s): %v", command, body, err)
	}
	if len(fp) != 32 {
		t.Fatalf("fingerprint has %d bytes, want 32 (SHA-256)", len(fp))
	}
	return fp
}

func TestFingerprintIgnoresLayout(t *testing.T) {
	t.Parallel()
	base := fingerprint(t, "invoice.create", fingerprintBase)
	for name, body := range map[string]string{
		"key order": `{"n":1,"lines":[{"unit_price":"100.00","quantity":"3"}],"customer":{"country":"LT","id":"cust-42"},"order_id":"order-1041"}`,
		"whitespace": "{\n  \"order_id\" : \"order-1041\",\r\n\t\"customer\" : { \"id\" : \"cust-42\" , \"country\":\"LT\" },\n" +
			"  \"lines\" : [ { \"quantity\" : \"3\", \"unit_price\" : \"100.00\" } ],\n  \"n\" : 1\n}\n",
		"escaped characters": `{"order_id":"order\u002d1041","customer":{"id":"cust-42","country":"\u004cT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1}`,
		"number spelling":    `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1.0}`,
	} {
		if got := fingerprint(t, "invoice.create", body); !bytes.Equal(got, base) {
			t.Errorf("%s changed the fingerprint of the same payload", name)
		}
	}
}

func TestFingerprintSeesValues(t *testing.T) {
	t.Parallel()
	base := fingerprint(t, "invoice.create", fingerprintBase)
	for name, body := range map[string]string{
		"string value":     `{"order_id":"order-1042","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1}`,
		"nested value":     `{"order_id":"order-1041","customer":{"id":"cust-43","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1}`,
		"amount precision": `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.0"}],"n":1}`,
		"number":           `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":2}`,
		"type":             `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":"1"}`,
		"added field":      `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1,"x":null}`,
		"removed field":    `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}]}`,
		"array order":      `{"order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"},{}],"n":1}`,
		"key case":         `{"Order_id":"order-1041","customer":{"id":"cust-42","country":"LT"},"lines":[{"quantity":"3","unit_price":"100.00"}],"n":1}`,
	} {
		if got := fingerprint(t, "invoice.create", body); bytes.Equal(got, base) {
			t.Errorf("changing the %s kept the fingerprint", name)
		}
	}
	if got := fingerprint(t, "company.create", fingerprintBase); bytes.Equal(got, base) {
		t.Error("the same body sent as another command has the same fingerprint")
	}
	// The separator keeps name and body apart: moving characters between them
	// must not produce the same input to the hash.
	if bytes.Equal(fingerprint(t, "x", `12`), fingerprint(t, "x1", `2`)) {
		t.Error("command name and body are not separated in the fingerprint")
	}
}

func TestFingerprintRefusesInvalidJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `{`, `{"a":1,}`, `{"a":'x'}`, `not json`} {
		if fp, err := protocol.Fingerprint("invoice.create", []byte(body)); err == nil {
			t.Errorf("Fingerprint(%q) = %x, nil; want an error", body, fp)
		}
	}
}
