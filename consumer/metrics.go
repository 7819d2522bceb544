package consumer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/ledger"
)

// Command outcomes counted by Metrics.
const (
	outcomeOK            = "ok"
	outcomeReplayed      = "replayed"
	outcomeReused        = "reused_key"
	outcomeInFlight      = "in_flight"
	outcomeBusinessError = "business_error"
	outcomeDeadLettered  = "dead_lettered"
	outcomeRetried       = "retried"
	// outcomeRefused is a message refused as sent and answered: done, not
	// dead-lettered.
	outcomeRefused = "refused"
	// outcomeMoved is a command of a company whose partition moved to
	// another cell while it was delivered here: the new cell runs it.
	outcomeMoved = "moved"
)

// Metrics are the consumer's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	commands   *prometheus.CounterVec
	handle     *prometheus.HistogramVec
	endToEnd   *prometheus.HistogramVec
	batchSize  prometheus.Histogram
	batchTimes *prometheus.HistogramVec
	fallbacks  prometheus.Counter
	refused    *prometheus.CounterVec
}

// NewMetrics registers the consumer's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	latency := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	m := &Metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_commands_total",
			Help: "Command deliveries by command and outcome (ok, business_error, replayed, reused_key, in_flight, retried, dead_lettered).",
		}, []string{"command", "outcome"}),
		handle: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceledger_command_handle_seconds",
			Help:    "Time from handing a delivery to the inbox to its result, including the wait for its batch's commit.",
			Buckets: latency,
		}, []string{"command"}),
		endToEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceledger_command_end_to_end_seconds",
			Help:    "Time from the command's arrival in JetStream to its committed result.",
			Buckets: latency,
		}, []string{"command"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onceledger_batch_commands",
			Help:    "Commands per group-commit transaction.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}),
		batchTimes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceledger_batch_seconds",
			Help:    "Time a group-commit transaction spends executing, and from sending its commit to the commit's answer (the commit phase includes the batch path's writes when they carry the commit).",
			Buckets: latency,
		}, []string{"phase"}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceledger_batch_fallbacks_total",
			Help: "Batches whose commands were executed together, failed, and were executed again one at a time (a concurrent transaction wrote the same order, say).",
		}),
		// Labelled by error code only: the codes are a small fixed set,
		// while a malformed message's subject can say anything.
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_client_errors_total",
			Help: "Commands refused as sent, by error code (idempotency_key_missing, idempotency_key_invalid, idempotency_key_reused, invalid_command): answered on their Reply-To and acknowledged, or dead-lettered when they have no Reply-To.",
		}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{m.commands, m.handle, m.endToEnd, m.batchSize, m.batchTimes, m.fallbacks, m.refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) count(command, outcome string) {
	if m != nil {
		m.commands.WithLabelValues(command, outcome).Inc()
	}
}

func (m *Metrics) clientError(code ledger.Code) {
	if m != nil {
		m.refused.WithLabelValues(string(code)).Inc()
	}
}

func (m *Metrics) handled(command string, started time.Time, published time.Time) {
	if m == nil {
		return
	}
	m.handle.WithLabelValues(command).Observe(time.Since(started).Seconds())
	if !published.IsZero() {
		m.endToEnd.WithLabelValues(command).Observe(time.Since(published).Seconds())
	}
}

func (m *Metrics) fallback() {
	if m != nil {
		m.fallbacks.Inc()
	}
}

func (m *Metrics) batch(size int, execute, commit time.Duration) {
	if m == nil {
		return
	}
	m.batchSize.Observe(float64(size))
	m.batchTimes.WithLabelValues("execute").Observe(execute.Seconds())
	m.batchTimes.WithLabelValues("commit").Observe(commit.Seconds())
}
