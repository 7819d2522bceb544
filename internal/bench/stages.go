package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Stages is where publish→result went in a paced phase (Config.Stages),
// per command published after the warm-up, from the spans the worker
// records under the trace the bench starts for each command (see
// docs/operations.md, Tracing):
//
//   - ToWorker: from publishing to the worker's delivery span starting:
//     JetStream storing the command and the worker's pull fetching it;
//   - Waiting: from there to its batch's "execute" span: reading the
//     command, waiting for its transaction slot and a connection;
//   - Execute: its batch's transaction up to the round trip that carries
//     the COMMIT: the claims of its keys, the reads, the passes before
//     the last;
//   - Commit: that round trip: the last pass's writes, the checks
//     deferred to the commit and the COMMIT, to its answer;
//   - ToProducer: from the commit's answer to the result at the producer:
//     the reply and the acknowledgement.
type Stages struct {
	Count      int      `json:"count"`
	ToWorker   *Latency `json:"to_worker"`
	Waiting    *Latency `json:"waiting"`
	Execute    *Latency `json:"execute"`
	Commit     *Latency `json:"commit"`
	ToProducer *Latency `json:"to_producer"`
}

// traceparent is the W3C header the bench sets on a command when its
// phase is traced.
const traceparent = "traceparent"

// stageSpans is a span processor that keeps, per command of the traced
// phase, when its spans started and ended. A command's trace ID is the
// phase's tag followed by the command's number, so a span finds its
// command without a lookup table.
type stageSpans struct {
	mu  sync.Mutex
	tag [8]byte
	// Nanoseconds since the Unix epoch, 0 for not seen, per command.
	received, executing, committing, committed []int64
}

var _ sdktrace.SpanProcessor = (*stageSpans)(nil)

// tracerProvider samples the spans under a sampled parent, the bench's
// traced commands, and nothing else.
func (c *stageSpans) tracerProvider() *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(c))
}

// track starts recording the spans of a phase of n commands and returns
// the phase's tag.
func (c *stageSpans) track(n int) [8]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = rand.Read(c.tag[:])
	c.received, c.executing = make([]int64, n), make([]int64, n)
	c.committing, c.committed = make([]int64, n), make([]int64, n)
	return c.tag
}

// traceparentOf is command i's traceparent under tag.
func traceparentOf(tag [8]byte, i int) string {
	var id [16]byte
	copy(id[:], tag[:])
	binary.BigEndian.PutUint64(id[8:], uint64(i))
	var span [8]byte
	binary.BigEndian.PutUint64(span[:], uint64(i)+1)
	return "00-" + hex.EncodeToString(id[:]) + "-" + hex.EncodeToString(span[:]) + "-01"
}

// OnStart records a delivery's span as it starts, and OnEnd the batch's
// spans as they end: both before the command's result is sent (the
// delivery's span itself ends only after its acknowledgement).
func (c *stageSpans) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if !strings.HasPrefix(s.Name(), "onceledger.command") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The first delivery: a redelivered command's wait counts.
	if i, ok := c.command(s.SpanContext().TraceID()); ok && c.received[i] == 0 {
		c.received[i] = s.StartTime().UnixNano()
	}
}

func (c *stageSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	name := s.Name()
	if name != "execute" && name != "commit" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.command(s.SpanContext().TraceID())
	if !ok {
		return
	}
	if name == "execute" {
		c.executing[i] = s.StartTime().UnixNano()
	} else {
		c.committing[i], c.committed[i] = s.StartTime().UnixNano(), s.EndTime().UnixNano()
	}
}

// command is the number of the traced phase's command of trace id; c.mu
// is held.
func (c *stageSpans) command(id trace.TraceID) (int, bool) {
	if [8]byte(id[:8]) != c.tag {
		return 0, false
	}
	i := binary.BigEndian.Uint64(id[8:])
	return int(i), i < uint64(len(c.received))
}

func (c *stageSpans) Shutdown(context.Context) error   { return nil }
func (c *stageSpans) ForceFlush(context.Context) error { return nil }

// stages reads, for each command of t published after warmUp and
// answered, its time in each stage; commands some span of which was not
// seen are left out (Count says how many are in).
func (c *stageSpans) stages(t *tracker, warmUp time.Duration) *Stages {
	c.mu.Lock()
	defer c.mu.Unlock()
	origin := t.start.UnixNano() - 1 // tracker times are ns after start, +1
	var toWorker, waiting, execute, commit, toProducer []time.Duration
	between := func(from, to int64) time.Duration { return time.Duration(max(0, to-from)) }
	for i := range min(len(t.sent), len(c.received)) {
		sent, got := t.sent[i].Load(), t.got[i].Load()
		if sent <= int64(warmUp) || got == 0 || c.received[i] == 0 || c.executing[i] == 0 || c.committed[i] == 0 {
			continue
		}
		toWorker = append(toWorker, between(origin+sent, c.received[i]))
		waiting = append(waiting, between(c.received[i], c.executing[i]))
		execute = append(execute, between(c.executing[i], c.committing[i]))
		commit = append(commit, between(c.committing[i], c.committed[i]))
		toProducer = append(toProducer, between(c.committed[i], origin+got))
	}
	sorted := func(d []time.Duration) *Latency { slices.Sort(d); return latencyOf(d) }
	return &Stages{Count: len(toWorker), ToWorker: sorted(toWorker), Waiting: sorted(waiting),
		Execute: sorted(execute), Commit: sorted(commit), ToProducer: sorted(toProducer)}
}

// traceHeader is what send sets on command i of a traced phase, "" when
// the phase is not traced.
func (t *tracker) traceHeader(i int) string {
	if !t.traced {
		return ""
	}
	return traceparentOf(t.tag, i)
}
