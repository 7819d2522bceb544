package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing is configured with the standard OpenTelemetry variables only: the
// exporter reads them itself (headers, timeout, compression, TLS), and a
// flag per variable would be a second, diverging spelling of each.
const (
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envSDKDisabled        = "OTEL_SDK_DISABLED"
)

// otlpEndpoint returns the variable that switches the exporter on and its
// value; name is empty when tracing is off. The traces-specific variable
// wins, as the exporter reads it.
func otlpEndpoint() (name, value string) {
	if disabled, _ := strconv.ParseBool(strings.TrimSpace(os.Getenv(envSDKDisabled))); disabled {
		return "", ""
	}
	for _, n := range []string{envOTLPTracesEndpoint, envOTLPEndpoint} {
		if v := strings.TrimSpace(os.Getenv(n)); v != "" {
			return n, v
		}
	}
	return "", ""
}

// checkTracingEnv reports OpenTelemetry settings the exporter would not
// honour. The exporter does not fail on them: it falls back to defaults and
// every span is lost without a word, so the worker refuses to start instead.
func checkTracingEnv() []error {
	name, endpoint := otlpEndpoint()
	if name == "" {
		return nil
	}
	var errs []error
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s=%q must be an http:// or https:// URL, e.g. http://otel-collector:4318", name, endpoint))
	}
	for _, n := range []string{envOTLPTracesProtocol, envOTLPProtocol} {
		switch p := strings.TrimSpace(os.Getenv(n)); p {
		case "", "http/protobuf", "http/json":
		default:
			errs = append(errs, fmt.Errorf("%s=%q: onceledger exports over OTLP/HTTP only; use http/protobuf or http/json and the collector's HTTP port (4318)", n, p))
		}
	}
	return errs
}

// startTracing returns the tracer provider the worker's components record
// with, and stop, which flushes what is buffered and shuts the exporter
// down. Without an OTLP endpoint the provider is a no-op and nothing is
// exported; trace context that arrives with commands is still passed on.
func startTracing(ctx context.Context, logger *slog.Logger) (tp trace.TracerProvider, stop func(), err error) {
	name, endpoint := otlpEndpoint()
	if name == "" {
		return noop.NewTracerProvider(), func() {}, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	// service.name first, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
	// merged after it, override it.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "onceledger")),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	provider := sdktrace.NewTracerProvider(
		// The batch processor keeps exporting off the command path: a slow
		// or absent collector costs dropped spans, never slower commands.
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(res),
	)
	// The binary owns the process's globals; export failures would
	// otherwise go to the standard logger, outside the worker's log.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: exporting spans failed", "error", err)
	}))
	logger.Info("tracing: exporting spans over OTLP/HTTP", "endpoint", redactEndpoint(endpoint))
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := provider.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
			logger.Warn("tracing: flushing spans at exit failed", "error", err)
		}
	}
	return provider, stop, nil
}

// redactEndpoint drops user information, which does not belong in a log.
func redactEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "(unparseable)"
	}
	u.User = nil
	return u.String()
}
