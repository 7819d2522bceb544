package portal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/onceledger/onceledger/examples"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/webhooks"
	"github.com/onceledger/onceledger/webhooks/catalogue"
)

var update = flag.Bool("update", false, "write the catalogue's examples (webhooks/catalogue/events) from the events the worker writes")

// schema compiles the catalogue's schema of typ.
func schema(t *testing.T, typ string) *jsonschema.Schema {
	t.Helper()
	doc := catalogue.EventSchema(typ)
	if doc == nil {
		t.Fatalf("the catalogue has no schema of %s", typ)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := "file:///events/" + typ + ".json"
	if err := c.AddResource(url, v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("schema of %s: %v", typ, err)
	}
	return s
}

func validate(t *testing.T, typ, what string, body []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := schema(t, typ).Validate(v); err != nil {
		t.Errorf("%s does not match the schema of %s: %v\n%s", what, typ, err, body)
	}
}

// Every event type has a schema and an example; the events the worker
// writes for examples/ match their schemas, and so do the examples.
func TestCatalogueDescribesTheEventsTheWorkerWrites(t *testing.T) {
	t.Parallel()
	list, err := catalogue.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, et := range list {
		types = append(types, et.Type)
		validate(t, et.Type, "the example of "+et.Type, []byte(et.Example))
	}
	want := append(slices.Clone(ledger.EventTypes), webhooks.EventTest)
	slices.Sort(want)
	if !slices.Equal(types, want) {
		t.Fatalf("the catalogue lists %v, want %v", types, want)
	}

	e := startEmpty(t)
	ids := examples.IDs{}
	for _, file := range examples.Order {
		body, err := examples.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		ids.Take(file, e.command(t, "acme", examples.Commands[file], "example-"+file, string(ids.Fill(body))))
	}
	id, _ := uuid.Parse(e.endpoint(t, "acme", "test-hook", "http://127.0.0.1:9/hook"))
	if _, err := webhooks.SendTest(context.Background(), e.Pool, "acme", id); err != nil {
		t.Fatal(err)
	}
	rows, err := e.Pool.Query(context.Background(), `SELECT type, body::text FROM outbox_events WHERE company_id = 'acme' ORDER BY sequence`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for rows.Next() {
		var typ, body string
		if err := rows.Scan(&typ, &body); err != nil {
			t.Fatal(err)
		}
		validate(t, typ, "the "+typ+" event the worker wrote", []byte(body))
		if *update && !seen[typ] {
			var pretty bytes.Buffer
			json.Indent(&pretty, []byte(body), "", "  ")
			pretty.WriteByte('\n')
			if err := os.WriteFile(filepath.Join("..", "..", "..", "webhooks", "catalogue", "events", typ+".json"), pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		seen[typ] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, typ := range want {
		if !seen[typ] {
			t.Errorf("running examples/ wrote no %s event: the catalogue's example of it is not checked", typ)
		}
	}
	if strings.Contains(strings.Join(types, " "), "whsec_") {
		t.Fatal("a secret in the catalogue")
	}
}
