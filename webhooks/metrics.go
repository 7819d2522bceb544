package webhooks

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dispatcher's Prometheus metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	attempts *prometheus.CounterVec
	latency  prometheus.Histogram
	delivery prometheus.Histogram
	claims   prometheus.Counter
	handedN  prometheus.Counter
	recorded prometheus.Histogram
}

// NewMetrics registers the dispatcher's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceledger_webhook_attempts_total",
			Help: "Webhook delivery attempts by HTTP status class (2xx, 3xx, 4xx, 5xx) or error (no HTTP answer).",
		}, []string{"status"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onceledger_webhook_attempt_seconds",
			Help:    "Duration of webhook delivery attempts.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
		delivery: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onceledger_webhook_delivery_seconds",
			Help:    "Time from an event's commit to its successful delivery to an endpoint.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400},
		}),
		claims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceledger_webhook_claims_total",
			Help: "Claims of due webhook deliveries, whether or not they found any.",
		}),
		handedN: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceledger_webhook_first_attempts_total",
			Help: "Webhook deliveries a consumer of this process created leased to the dispatcher and handed over, attempted without a claim.",
		}),
		recorded: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onceledger_webhook_recorded_attempts",
			Help:    "Webhook attempts recorded together, per recording.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.latency, m.delivery, m.claims, m.handedN, m.recorded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) attempt(r result, eventCreated time.Time) {
	if m == nil {
		return
	}
	class := "error"
	if r.status > 0 {
		class = strconv.Itoa(r.status/100) + "xx"
	}
	m.attempts.WithLabelValues(class).Inc()
	m.latency.Observe(r.latency.Seconds())
	if r.status >= 200 && r.status < 300 && !eventCreated.IsZero() {
		m.delivery.Observe(time.Since(eventCreated).Seconds())
	}
}

func (m *Metrics) claim() {
	if m != nil {
		m.claims.Inc()
	}
}

func (m *Metrics) handed(n int) {
	if m != nil && n > 0 {
		m.handedN.Add(float64(n))
	}
}

func (m *Metrics) recording(attempts int) {
	if m != nil {
		m.recorded.Observe(float64(attempts))
	}
}
