package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/onceledger/onceledger/examples"
	"github.com/onceledger/onceledger/ledger"
)

func readExample(t testing.TB, file string) []byte {
	t.Helper()
	b, err := examples.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// compiler loads the checked-in OpenAPI document and schemas, as they are
// in the repository, so relative references resolve as they do when
// served. Formats are asserted, so "date" and "uuid" are checked too.
func compiler(t testing.TB) *jsonschema.Compiler {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("file:///api/openapi.json", decodeJSON(t, openAPI)); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range ledger.CommandNames() {
		b, ok := Schema(cmd)
		if !ok {
			t.Fatalf("no schema for %s", cmd)
		}
		if err := c.AddResource("file:///api/schemas/"+cmd+".json", decodeJSON(t, b)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func commandSchema(t testing.TB, c *jsonschema.Compiler, command string) *jsonschema.Schema {
	t.Helper()
	s, err := c.Compile("file:///api/schemas/" + command + ".json")
	if err != nil {
		t.Fatalf("schema of %s: %v", command, err)
	}
	return s
}

// componentSchema compiles a schema of the OpenAPI document's components.
func componentSchema(t testing.TB, c *jsonschema.Compiler, name string) *jsonschema.Schema {
	t.Helper()
	s, err := c.Compile("file:///api/openapi.json#/components/schemas/" + name)
	if err != nil {
		t.Fatalf("component %s: %v", name, err)
	}
	return s
}

// Every file in schemas/ is a command's, every command has one, and every
// example validates against its schema and decodes with ledger.Decode.
func TestExamplesAgreeWithSchemasAndDecode(t *testing.T) {
	c := compiler(t)
	entries, err := schemaFiles.ReadDir("schemas")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	var want []string
	for _, cmd := range ledger.CommandNames() {
		want = append(want, cmd+".json")
	}
	if !slices.Equal(files, want) {
		t.Fatalf("schemas/ holds %v, want one per command: %v", files, want)
	}

	onDisk, err := filepath.Glob(filepath.Join("..", "examples", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, path := range onDisk {
		file := filepath.Base(path)
		cmd, ok := examples.Commands[file]
		if !ok {
			t.Errorf("examples/%s is not mapped to a command in examples.Commands", file)
			continue
		}
		covered[cmd] = true
		body := readExample(t, file)
		if err := commandSchema(t, c, cmd).Validate(decodeJSON(t, body)); err != nil {
			t.Errorf("examples/%s is invalid per schemas/%s.json: %v", file, cmd, err)
		}
		if _, err := ledger.Decode(cmd, body); err != nil {
			t.Errorf("examples/%s does not decode as %s: %v", file, cmd, err)
		}
	}
	for _, cmd := range ledger.CommandNames() {
		if !covered[cmd] {
			t.Errorf("no example in examples/ for %s", cmd)
		}
	}
}

// Bodies that are wrong in the ways a schema can express are refused by the
// schema and by ledger.Decode alike.
func TestSchemasRefuseWhatDecodeRefuses(t *testing.T) {
	c := compiler(t)
	invoice := string(readExample(t, "invoice.json"))
	cases := []struct {
		command, body, why string
	}{
		{"invoice.create", strings.Replace(invoice, `"100.00"`, `100.00`, 1), "an amount as a JSON number"},
		{"invoice.create", strings.Replace(invoice, `"order_id"`, `"order_no"`, 1), "an unknown field (and order_id missing)"},
		{"invoice.create", strings.Replace(invoice, `"2026-12-02"`, `"02.12.2026"`, 1), "a date not in YYYY-MM-DD"},
		{"invoice.create", strings.Replace(invoice, `"country": "LT"}`, `"country": "Lithuania"}`, 1), "a country that is not alpha-2"},
		{"invoice.create", strings.Replace(invoice, `"100.00"`, `"1e2"`, 1), "an exponent"},
		{"invoice.create", strings.Replace(invoice, `"vat_rate": "21"`, `"vat_rate": "0", "vat_treatment": "zero"`, 1), "an unknown VAT treatment"},
		{"invoice.create", strings.Replace(invoice, `"vat_rate": "21"`, `"vat_rate": "21", "vat_treatment": "reverse_charge_domestic"`, 1), "a purchase's VAT treatment on a sale"},
		{"invoice.create", `{"order_id": "o-1", "customer": {"id": "c", "name": "n", "country": "LT"}, "currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16", "lines": []}`, "no lines"},
		{"company.create", `{"name": "Acme", "country": "LT"}`, "no currency"},
		{"company.create", `{"name": "Acme", "country": "LT", "currency": "euro"}`, "a currency that is not a code"},
		{"credit_note.create", `{"invoice_number": "INV-2026-000001", "issue_date": "2026-12-05", "reason": "r"}`, "nothing to credit"},
		{"credit_note.create", `{"invoice_number": "INV-2026-000001", "invoice_id": "0193a5c2-7c1e-7d2a-9f3b-2b1c4d5e6f70", "issue_date": "2026-12-05", "reason": "r", "full": true}`, "both invoice_id and invoice_number"},
		{"credit_note.create", `{"invoice_number": "INV-2026-000001", "issue_date": "2026-12-05", "reason": "r", "full": true, "lines": [{"line": 1, "quantity": "1"}]}`, "full and lines"},
		{"purchase_credit_note.record", `{"purchase_invoice_id": "0193a4f2-7c1e-7d3a-9b2f-5e8c1a2b3c4d", "document_number": "K-1", "issue_date": "2026-12-05", "reason": "r"}`, "a supplier's credit note of nothing"},
		{"purchase_credit_note.record", `{"document_number": "K-1", "issue_date": "2026-12-05", "reason": "r", "full": true}`, "a supplier's credit note of no invoice"},
		{"payment.record", `{"payment_ref": "p", "customer_id": "c", "received_on": "2026-12-10", "method": "cash", "currency": "EUR", "amount": "1.00"}`, "an unknown method"},
		{"asset.register", `{"asset_id": "a", "description": "d", "acquisition_date": "2026-12-03", "currency": "EUR", "cost": "100.00", "useful_life_months": 0}`, "no useful life"},
		{"depreciation.run", `{"asset_id": "a", "period": "2026-13"}`, "a month that does not exist"},
		{"webhook_endpoint.create", `{"url": "ftp://example.com/hook"}`, "a URL that is not http(s)"},
		{"webhook_endpoint.create", `{"url": "https://example.com/hook", "event_types": ["invoice.paid"]}`, "an unknown event type"},
		{"webhook_endpoint.update", `{"endpoint_id": "0193a5c2-7c1e-7d2a-9f3b-2b1c4d5e6f70"}`, "nothing to update"},
		{"webhook_endpoint.disable", `{"endpoint_id": "endpoint-1"}`, "an endpoint_id that is not a UUID"},
		{"webhook_endpoint.rotate_secret", `{"endpoint_id": "0193a5c2-7c1e-7d2a-9f3b-2b1c4d5e6f70", "secret": "hunter2"}`, "a secret that is not whsec_"},
	}
	for _, cs := range cases {
		if err := commandSchema(t, c, cs.command).Validate(decodeJSON(t, []byte(cs.body))); err == nil {
			t.Errorf("%s with %s: the schema accepts it", cs.command, cs.why)
		}
		if _, err := ledger.Decode(cs.command, []byte(cs.body)); err == nil {
			t.Errorf("%s with %s: ledger.Decode accepts it", cs.command, cs.why)
		}
	}
}

// openAPIDoc is the part of the OpenAPI document the tests look at.
type openAPIDoc struct {
	OpenAPI string `json:"openapi"`
	Paths   map[string]map[string]struct {
		Security    *[]any `json:"security"`
		Command     string `json:"x-onceledger-command"`
		Parameters  []map[string]any
		RequestBody *struct {
			Content map[string]struct {
				Schema   map[string]any `json:"schema"`
				Examples map[string]struct {
					Value json.RawMessage `json:"value"`
				} `json:"examples"`
			} `json:"content"`
		} `json:"requestBody"`
		Responses map[string]any `json:"responses"`
	} `json:"paths"`
}

// The document describes exactly the routes the server has, each command
// route's body is its command's schema, and its examples are valid.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	s := &Server{mux: http.NewServeMux()}
	s.routes()
	served := map[string]bool{}
	for _, p := range s.patterns {
		served[p] = true
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	for p := range served {
		if !documented[p] {
			t.Errorf("route %s is not in openapi.json", p)
		}
	}
	for p := range documented {
		if !served[p] {
			t.Errorf("openapi.json documents %s, which the server does not serve", p)
		}
	}

	c := compiler(t)
	commandsRouted := map[string]bool{}
	for _, rt := range commandRoutes {
		commandsRouted[rt.command] = true
		op := doc.Paths[rt.path]["post"]
		if op.Command != rt.command {
			t.Errorf("%s: x-onceledger-command %q, want %q", rt.path, op.Command, rt.command)
		}
		if op.RequestBody == nil {
			t.Errorf("%s: no requestBody", rt.path)
			continue
		}
		media := op.RequestBody.Content["application/json"]
		if ref := media.Schema["$ref"]; ref != "schemas/"+rt.command+".json" {
			t.Errorf("%s: body schema %v, want schemas/%s.json", rt.path, ref, rt.command)
		}
		if len(media.Examples) == 0 {
			t.Errorf("%s: no example", rt.path)
		}
		for name, ex := range media.Examples {
			if err := commandSchema(t, c, rt.command).Validate(decodeJSON(t, ex.Value)); err != nil {
				t.Errorf("%s example %s: %v", rt.path, name, err)
			}
			if _, err := ledger.Decode(rt.command, ex.Value); err != nil {
				t.Errorf("%s example %s does not decode: %v", rt.path, name, err)
			}
		}
		for _, code := range []string{strconv.Itoa(rt.status), "202", "400", "401", "408", "421", "409", "413", "422", "503"} {
			if _, ok := op.Responses[code]; !ok {
				t.Errorf("%s: no %s response", rt.path, code)
			}
		}
	}
	for _, cmd := range ledger.CommandNames() {
		if !commandsRouted[cmd] {
			t.Errorf("command %s has no route", cmd)
		}
	}
	for _, name := range []string{"Problem", "Accepted", "Invoice", "InvoiceDetail", "TrialBalance", "VATReturn", "CommandResult"} {
		componentSchema(t, c, name)
	}
}

// The problem codes the document lists are those the server can send.
func TestOpenAPIListsEveryProblemCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for code := range titles {
		want = append(want, string(code))
	}
	got := doc.Components.Schemas.Problem.Properties.Code.Enum
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Problem.code enum %v, want %v", got, want)
	}
}

// Every vat_treatment the schemas and the OpenAPI document enumerate is
// the ledger's list for its kind of line, so a treatment added to the
// ledger is offered, and one the ledger refuses is not.
func TestTreatmentEnumsAreTheLedgers(t *testing.T) {
	names := func(ts []ledger.VATTreatment) []string {
		var s []string
		for _, tr := range ts {
			s = append(s, string(tr))
		}
		return s
	}
	purchaseSchema, _ := Schema("purchase_invoice.record")
	salesSchema, _ := Schema("invoice.create")
	for _, c := range []struct {
		name string
		doc  []byte
		want []string
	}{
		{"schemas/purchase_invoice.record.json", purchaseSchema, names(ledger.PurchaseTreatments)},
		{"schemas/invoice.create.json", salesSchema, names(ledger.SalesTreatments)},
		{"openapi.json (an invoice's lines)", openAPI, names(ledger.SalesTreatments)},
	} {
		var enums [][]string
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if p, ok := v["vat_treatment"].(map[string]any); ok {
					var e []string
					list, _ := p["enum"].([]any)
					for _, x := range list {
						name, _ := x.(string)
						e = append(e, name)
					}
					enums = append(enums, e)
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(decodeJSON(t, c.doc))
		if len(enums) == 0 {
			t.Errorf("%s enumerates no vat_treatment", c.name)
		}
		for _, e := range enums {
			if !slices.Equal(e, c.want) {
				t.Errorf("%s enumerates %v, the ledger %v", c.name, e, c.want)
			}
		}
	}
}
