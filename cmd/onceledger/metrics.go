package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/outbox"
	"github.com/onceledger/onceledger/webhooks"
)

// observability is the worker's metrics registry and the components'
// metrics registered with it.
type observability struct {
	registry *prometheus.Registry
	consumer *consumer.Metrics
	webhooks *webhooks.Metrics
}

func newObservability(pool *pgxpool.Pool, js jetstream.JetStream, streams consumer.StreamConfig) (*observability, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	cm, err := consumer.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	wm, err := webhooks.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(&stateCollector{pool: pool, js: js, stream: streams.Stream, deadLetters: streams.DeadLetterStream, durable: streams.Durable}); err != nil {
		return nil, err
	}
	return &observability{registry: reg, consumer: cm, webhooks: wm}, nil
}

// stateCollector reads backlogs when scraped: what is waiting in the
// command consumer, the outbox and the webhook deliveries, and the pool.
type stateCollector struct {
	pool        *pgxpool.Pool
	js          jetstream.JetStream
	stream      string
	deadLetters string
	durable     string
}

var (
	descConsumerPending    = prometheus.NewDesc("onceledger_consumer_pending_messages", "Commands in the stream not yet delivered to a worker.", nil, nil)
	descConsumerAckPending = prometheus.NewDesc("onceledger_consumer_ack_pending_messages", "Commands delivered and not yet acknowledged.", nil, nil)
	descOutboxBacklog      = prometheus.NewDesc("onceledger_outbox_unpublished_events", "Committed events not yet published to the events stream.", nil, nil)
	descOutboxOldest       = prometheus.NewDesc("onceledger_outbox_oldest_unpublished_seconds", "Age of the oldest unpublished event (0 when none).", nil, nil)
	descWebhookBacklog     = prometheus.NewDesc("onceledger_webhook_undelivered", "Webhook deliveries not yet delivered or failed.", nil, nil)
	descWebhookOldest      = prometheus.NewDesc("onceledger_webhook_oldest_undelivered_seconds", "Age of the oldest event with an undelivered delivery (0 when none).", nil, nil)
	descPoolConns          = prometheus.NewDesc("onceledger_db_pool_connections", "Database pool connections by state.", []string{"state"}, nil)
	descPoolMax            = prometheus.NewDesc("onceledger_db_pool_max_connections", "Database pool size limit.", nil, nil)
	descPoolAcquires       = prometheus.NewDesc("onceledger_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil)
	descPoolAcquireWait    = prometheus.NewDesc("onceledger_db_pool_acquire_wait_seconds_total", "Time spent waiting for pool connections.", nil, nil)
	descScrapeError        = prometheus.NewDesc("onceledger_state_scrape_errors", "1 when part of the backlog could not be read during this scrape.", []string{"source"}, nil)
	descStreamBytes        = prometheus.NewDesc("onceledger_stream_bytes", "Bytes a stream stores.", []string{"stream"}, nil)
	descStreamMaxBytes     = prometheus.NewDesc("onceledger_stream_max_bytes", "A stream's bound in bytes; -1 when the server's store is the bound.", []string{"stream"}, nil)
	descStoreBytes         = prometheus.NewDesc("onceledger_jetstream_store_bytes", "Bytes the account's JetStream file store holds.", nil, nil)
	descStoreMaxBytes      = prometheus.NewDesc("onceledger_jetstream_store_max_bytes", "The account's JetStream file store limit; -1 when the server's store is the bound.", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConsumerPending, descConsumerAckPending, descOutboxBacklog, descOutboxOldest,
		descWebhookBacklog, descWebhookOldest, descPoolConns, descPoolMax, descPoolAcquires, descPoolAcquireWait, descScrapeError,
		descStreamBytes, descStreamMaxBytes, descStoreBytes, descStoreMaxBytes} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	failed := func(source string, err error) {
		v := 0.0
		if err != nil {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, v, source)
	}

	cons, err := c.js.Consumer(ctx, c.stream, c.durable)
	if err == nil {
		var info *jetstream.ConsumerInfo
		if info, err = cons.Info(ctx); err == nil {
			ch <- prometheus.MustNewConstMetric(descConsumerPending, prometheus.GaugeValue, float64(info.NumPending))
			ch <- prometheus.MustNewConstMetric(descConsumerAckPending, prometheus.GaugeValue, float64(info.NumAckPending))
		}
	}
	failed("jetstream", err)

	err = nil
	for _, name := range []string{c.stream, c.deadLetters} {
		s, serr := c.js.Stream(ctx, name)
		if serr == nil {
			var info *jetstream.StreamInfo
			if info, serr = s.Info(ctx); serr == nil {
				ch <- prometheus.MustNewConstMetric(descStreamBytes, prometheus.GaugeValue, float64(info.State.Bytes), name)
				ch <- prometheus.MustNewConstMetric(descStreamMaxBytes, prometheus.GaugeValue, float64(info.Config.MaxBytes), name)
			}
		}
		err = errors.Join(err, serr)
	}
	if acct, aerr := c.js.AccountInfo(ctx); aerr == nil {
		ch <- prometheus.MustNewConstMetric(descStoreBytes, prometheus.GaugeValue, float64(acct.Store))
		ch <- prometheus.MustNewConstMetric(descStoreMaxBytes, prometheus.GaugeValue, float64(acct.Limits.MaxStore))
	} else {
		err = errors.Join(err, aerr)
	}
	failed("jetstream_store", err)

	backlog, err := outbox.ReadBacklog(ctx, c.pool, "")
	if err == nil {
		var oldest time.Duration
		if backlog.Oldest != nil {
			oldest = backlog.Oldest.Age
		}
		ch <- prometheus.MustNewConstMetric(descOutboxBacklog, prometheus.GaugeValue, float64(backlog.Unpublished))
		ch <- prometheus.MustNewConstMetric(descOutboxOldest, prometheus.GaugeValue, oldest.Seconds())
	}
	failed("outbox", err)

	var undelivered int64
	var oldestDelivery float64
	// The two statuses as an OR: each matches the partial index of its
	// deliveries (queued, in flight), where an IN list matches neither.
	err = c.pool.QueryRow(ctx, `
		SELECT count(*), coalesce(extract(epoch FROM now() - min(ev.created_at)), 0)::float8
		  FROM webhook_deliveries d JOIN outbox_events ev ON ev.id = d.event_id
		 WHERE (d.status = 'pending' OR d.status = 'delivering')`).Scan(&undelivered, &oldestDelivery)
	if err == nil {
		ch <- prometheus.MustNewConstMetric(descWebhookBacklog, prometheus.GaugeValue, float64(undelivered))
		ch <- prometheus.MustNewConstMetric(descWebhookOldest, prometheus.GaugeValue, oldestDelivery)
	}
	failed("webhooks", err)

	st := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(st.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(st.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(st.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(descPoolMax, prometheus.GaugeValue, float64(st.MaxConns()))
	ch <- prometheus.MustNewConstMetric(descPoolAcquires, prometheus.CounterValue, float64(st.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(descPoolAcquireWait, prometheus.CounterValue, st.AcquireDuration().Seconds())
}
