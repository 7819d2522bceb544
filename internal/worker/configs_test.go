package worker_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/groupcommit"
	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/consumer/transport"
	"github.com/onceledger/onceledger/httpapi"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
	"github.com/onceledger/onceledger/webhooks/receive"
)

// The configurations of the public packages are what a program built on
// them fills in: none of their fields may need a type of internal/, which
// such a program cannot import.
func TestPublicConfigsNameNoInternalType(t *testing.T) {
	t.Parallel()
	for _, cfg := range []any{
		consumer.Config{}, groupcommit.Config{}, transport.SubscriberConfig{}, streams.Config{},
		outbox.StreamConfig{}, outbox.RelayConfig{}, webhooks.DispatcherConfig{}, receive.Config{},
		httpapi.Config{}, client.Config{},
	} {
		typ := reflect.TypeOf(cfg)
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			if internal := internalIn(f.Type, map[reflect.Type]bool{}); internal != "" {
				t.Errorf("%s.%s needs %s", typ, f.Name, internal)
			}
		}
	}
}

// internalIn returns an internal type that t is or is made of (through
// pointers, slices, maps, channels, functions and exported struct
// fields), or "".
func internalIn(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	if strings.Contains(t.PkgPath(), "/internal/") {
		return t.String()
	}
	var parts []reflect.Type
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		parts = append(parts, t.Elem())
	case reflect.Map:
		parts = append(parts, t.Key(), t.Elem())
	case reflect.Func:
		for i := range t.NumIn() {
			parts = append(parts, t.In(i))
		}
		for i := range t.NumOut() {
			parts = append(parts, t.Out(i))
		}
	case reflect.Interface:
		for i := range t.NumMethod() {
			parts = append(parts, t.Method(i).Type)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				parts = append(parts, t.Field(i).Type)
			}
		}
	}
	for _, p := range parts {
		if s := internalIn(p, seen); s != "" {
			return s
		}
	}
	return ""
}
