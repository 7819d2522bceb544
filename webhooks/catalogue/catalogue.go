// Package catalogue describes every event a webhook endpoint may receive:
// the JSON Schema of its body, made from the Go type of its data, and an
// example the worker wrote. It sits beside the event types (ledger's
// EventTypes and webhooks.EventTest); the portal shows it, and its test
// (in internal/web/portal, which runs a worker) checks that the events the
// worker writes match it.
package catalogue

import (
	"embed"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// eventData holds, for every event type, a value of the type the worker
// puts in the event's data: the view the command's result holds (see
// ledger/postgres, the done and outcome calls). The schemas are made from
// these types, so they change when the events do; the test checks that
// every event type has one and that the events the worker writes match
// (internal/web/portal's TestCatalogueDescribesTheEventsTheWorkerWrites).
var eventData = map[string]any{
	ledger.EventCompanyCreated:             ledger.Company{},
	ledger.EventInvoiceCreated:             ledger.InvoiceView{},
	ledger.EventCreditNoteCreated:          ledger.CreditNoteView{},
	ledger.EventPaymentRecorded:            ledger.PaymentView{},
	ledger.EventSettlementRecorded:         ledger.SettlementView{},
	ledger.EventPurchaseInvoiceRecorded:    ledger.PurchaseInvoiceView{},
	ledger.EventPurchaseCreditNoteRecorded: ledger.PurchaseCreditNoteView{},
	ledger.EventPurchaseInvoiceReversed:    ledger.PurchaseReversalView{},
	ledger.EventSupplierPaymentRecorded:    ledger.SupplierPaymentView{},
	ledger.EventSupplierCreditApplied:      ledger.SupplierCreditApplicationView{},
	ledger.EventSupplierCreditRefunded:     ledger.SupplierCreditRefundView{},
	ledger.EventJournalEntryRecorded:       ledger.ManualJournalView{},
	ledger.EventAssetRegistered:            ledger.AssetView{},
	ledger.EventDepreciationPosted:         ledger.DepreciationView{},
	ledger.EventCustomerCreditApplied:      ledger.CreditApplicationView{},
	ledger.EventCustomerCreditRefunded:     ledger.CreditRefundView{},
	ledger.EventPeriodClosed:               ledger.PeriodCloseView{},
	ledger.EventYearClosed:                 ledger.YearCloseView{},
	ledger.EventOpeningBalancesRecorded:    ledger.OpeningBalancesView{},
	ledger.EventFXRateRecorded:             ledger.FXRateView{},
	ledger.EventFXRevalued:                 ledger.FXRevaluationView{},
	ledger.EventWebhookEndpointDisabled:    webhooks.EndpointView{},
	webhooks.EventTest:                     webhooks.TestEvent{},
}

// examples are events the worker wrote when it ran the commands of
// examples/, one per type (made by the catalogue's test with -update).
//
//go:embed events/*.json
var examples embed.FS

// EventType is one entry of the catalogue.
type EventType struct {
	Type string
	// Schema is the JSON Schema (2020-12) of the whole webhook body.
	Schema string
	// Example is a body of this type the worker wrote.
	Example string
}

// Catalogue returns every event type an endpoint may receive, sorted,
// with its schema and an example.
func Catalogue() ([]EventType, error) {
	var out []EventType
	for typ := range eventData {
		schema, err := json.MarshalIndent(EventSchema(typ), "", "  ")
		if err != nil {
			return nil, err
		}
		example, err := examples.ReadFile("events/" + typ + ".json")
		if err != nil {
			return nil, fmt.Errorf("no example of %s: %w", typ, err)
		}
		out = append(out, EventType{Type: typ, Schema: string(schema), Example: strings.TrimSpace(string(example))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

// ExampleData returns the data of the catalogue's example of typ.
func ExampleData(typ string) (json.RawMessage, error) {
	if _, ok := eventData[typ]; !ok || typ == webhooks.EventTest {
		return nil, fmt.Errorf("no example of %q", typ)
	}
	raw, err := examples.ReadFile("events/" + typ + ".json")
	if err != nil {
		return nil, err
	}
	var ev struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("example of %s: %w", typ, err)
	}
	return ev.Data, nil
}

// EventSchema returns the JSON Schema of a webhook body of type typ, or
// nil for an unknown type.
func EventSchema(typ string) map[string]any {
	data, ok := eventData[typ]
	if !ok {
		return nil
	}
	s := schemaOf(reflect.TypeOf(outbox.Event{}))
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = typ
	props := s["properties"].(map[string]any)
	props["type"] = map[string]any{"const": typ}
	props["data"] = schemaOf(reflect.TypeOf(data))
	return s
}

var (
	timeType = reflect.TypeOf(time.Time{})
	uuidType = reflect.TypeOf(uuid.UUID{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

// schemaOf is the JSON Schema of the JSON encoding/json makes of t.
func schemaOf(t reflect.Type) map[string]any {
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	case rawType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return map[string]any{"anyOf": []any{schemaOf(t.Elem()), map[string]any{"type": "null"}}}
	case reflect.Struct:
		props, required := map[string]any{}, []string{}
		addFields(t, props, &required)
		sort.Strings(required)
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	case reflect.Slice, reflect.Array:
		// A nil slice is encoded as null.
		return map[string]any{"type": []any{"array", "null"}, "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}

// addFields adds the JSON fields of struct t, those of embedded structs
// included, to props and, when always present, to required.
func addFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = schemaOf(f.Type)
		if !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,") {
			*required = append(*required, name)
		}
	}
}
