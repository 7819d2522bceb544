package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceledger/onceledger/internal/tracecontext"
)

// result is what one attempt came to.
type result struct {
	at      time.Time
	status  int // 0: no HTTP answer
	latency time.Duration
	err     string
	snippet string
	// signature is the webhook-signature header sent, kept in the attempt
	// log so a receiver's owner can compare it with what arrived.
	signature  string
	retryAfter time.Duration
	// cause is the client's error when there was no HTTP answer.
	cause error
}

const snippetBytes = 1024

// attempt sends one delivery and hands its result to rec, which calls
// done once the result is recorded (or recording failed).
func (d *Dispatcher) attempt(ctx context.Context, c claimed, rec *recorder, done func()) {
	ctx, span := d.startSpan(ctx, c)
	r := d.send(ctx, c)
	endSpan(span, r)
	d.cfg.Metrics.attempt(r, c.eventCreated)
	// Recorded under the attempt's span, so a webhook_endpoint.disabled
	// event this attempt causes continues the same trace.
	rec.add(finished{ctx: ctx, c: c, r: r, done: done})
}

func (d *Dispatcher) send(ctx context.Context, c claimed) result {
	r := result{at: time.Now()}
	secrets, err := activeSecrets(d.cfg.Secrets, c.company, c.secrets, r.at)
	switch {
	case errors.Is(err, ErrUnknownKey):
		r.err = "the endpoint's signing secret is sealed with a key ONCELEDGER_SECRETS_KEY does not hold"
		return r
	case err != nil || len(secrets) == 0:
		r.err = "endpoint has no usable signing secret"
		return r
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		r.err = "building the request: " + err.Error()
		return r
	}
	for k, v := range Headers(c.eventID.String(), r.at, c.body, secrets...) {
		req.Header[k] = v
		if strings.EqualFold(k, "webhook-signature") {
			r.signature = strings.Join(v, " ")
		}
	}
	// Beside the signature, not under it: Standard Webhooks signs the ID,
	// the timestamp and the body only, so receivers verify as before.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceledger-webhooks/1")
	resp, err := d.client.Do(req)
	r.latency = time.Since(r.at)
	if err != nil {
		r.err, r.cause = textColumn(err.Error()), err
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, snippetBytes))
	for !utf8.Valid(buf) && len(buf) > 0 {
		buf = buf[:len(buf)-1]
	}
	r.snippet = textColumn(string(buf))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		r.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), r.at)
	}
	return r
}

// startSpan starts the attempt's client span, a child of the context the
// event was written under (a root when it has none). Only the endpoint's
// host is recorded: the URL's path and query often hold a receiver's
// access token.
func (d *Dispatcher) startSpan(ctx context.Context, c claimed) (context.Context, trace.Span) {
	host := c.url
	if u, err := url.Parse(c.url); err == nil {
		host = u.Host
	}
	return d.tracer.Start(tracecontext.FromColumns(ctx, c.traceparent, c.tracestate), "webhook.deliver",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", http.MethodPost),
			attribute.String("server.address", host),
			attribute.String("onceledger.company", c.company),
			attribute.String("onceledger.event_id", c.eventID.String()),
			attribute.String("onceledger.event_type", c.eventType),
			attribute.String("onceledger.delivery_id", c.id.String()),
			attribute.String("onceledger.endpoint_id", c.endpointID.String()),
			attribute.Int("onceledger.attempt", c.attempt),
		))
}

// endSpan ends an attempt's span with its answer. The error text is the
// cause without the URL, which net/http's errors quote in full.
func endSpan(span trace.Span, r result) {
	switch {
	case r.status >= 200 && r.status < 300:
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
	case r.status != 0:
		span.SetAttributes(attribute.Int("http.response.status_code", r.status))
		span.SetStatus(codes.Error, http.StatusText(r.status))
	default:
		msg := "no HTTP answer"
		var ue *url.Error
		if errors.As(r.cause, &ue) {
			msg = ue.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// textColumn makes valid UTF-8 s storable in a text column, which cannot
// hold NUL: each becomes U+FFFD.
func textColumn(s string) string {
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// parseRetryAfter reads seconds or an HTTP date; capped at a day.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs >= 0 {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, 24*time.Hour))
}
