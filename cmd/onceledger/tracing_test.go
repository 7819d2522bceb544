package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"
)

// clearTracingEnv leaves the test with no OpenTelemetry settings but those
// it sets itself.
func clearTracingEnv(t *testing.T) {
	for _, k := range []string{envOTLPEndpoint, envOTLPTracesEndpoint, envOTLPProtocol, envOTLPTracesProtocol, envSDKDisabled,
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
}

func TestTracingIsOffUnlessAnEndpointIsSet(t *testing.T) {
	clearTracingEnv(t)
	discard := slog.New(slog.DiscardHandler)
	tp, stop, err := startTracing(context.Background(), discard)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, ok := tp.(noop.TracerProvider); !ok {
		t.Errorf("without an endpoint the provider is %T, want the no-op provider", tp)
	}

	t.Setenv(envOTLPEndpoint, "http://127.0.0.1:4318")
	t.Setenv(envSDKDisabled, "true")
	tp, stop, err = startTracing(context.Background(), discard)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, ok := tp.(noop.TracerProvider); !ok {
		t.Errorf("with OTEL_SDK_DISABLED=true the provider is %T, want the no-op provider", tp)
	}
}

// otlpReceiver stands in for a collector's OTLP/HTTP port and keeps the
// bodies it was sent.
func otlpReceiver(t *testing.T) (url string, bodies func() [][]byte) {
	var mu sync.Mutex
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("exporter sent %s %s (%s), want POST /v1/traces as protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach the collector by the
// time stop returns, under service.name onceledger unless OTEL_SERVICE_NAME
// says otherwise.
func TestTracingExportsOverOTLP(t *testing.T) {
	for _, c := range []struct{ serviceName, want string }{{"", "onceledger"}, {"ledger-eu", "ledger-eu"}} {
		clearTracingEnv(t)
		url, bodies := otlpReceiver(t)
		t.Setenv(envOTLPEndpoint, url)
		t.Setenv("OTEL_SERVICE_NAME", c.serviceName)
		var logs bytes.Buffer
		tp, stop, err := startTracing(context.Background(), slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		_, span := tp.Tracer("test").Start(context.Background(), "exported-span")
		span.End()
		stop()
		all := bytes.Join(bodies(), nil)
		if !bytes.Contains(all, []byte("exported-span")) || !bytes.Contains(all, []byte(c.want)) {
			t.Errorf("OTEL_SERVICE_NAME=%q: the collector received %q, want the span under service %s", c.serviceName, all, c.want)
		}
		if !strings.Contains(logs.String(), "exporting spans over OTLP/HTTP") {
			t.Errorf("start was not logged: %s", logs.String())
		}
	}
}

func TestRunRefusesUnusableTracingSettings(t *testing.T) {
	clearTracingEnv(t)
	t.Setenv("DATABASE_URL", "")
	t.Setenv(envOTLPEndpoint, "collector:4318")
	t.Setenv(envOTLPTracesProtocol, "grpc")
	code, _, errOut := invoke(context.Background(), "", "run", "-database-url", "postgres://x/y")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		`OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" must be an http:// or https:// URL`,
		`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="grpc": onceledger exports over OTLP/HTTP only`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
