package bench

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Phase is what one phase measured.
type Phase struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	// Commands is how many invoice.create commands the phase sent; each got
	// exactly one ok result.
	Commands int `json:"commands"`
	// InboxKeys is how many keys the inbox held when the phase started.
	InboxKeys int64 `json:"inbox_keys"`
	// Seconds from the first publish to the last result.
	Seconds float64 `json:"seconds"`
	// Rate is Commands / Seconds: completed commands per second.
	Rate float64 `json:"commands_per_second"`
	// TargetRate is the rate a paced phase published at.
	TargetRate float64 `json:"target_rate,omitempty"`
	// Latency is publish→result per command (paced phases), over the
	// commands published after the warm-up.
	Latency *Latency `json:"latency,omitempty"`
	// WarmUpSeconds is the start of a paced phase left out of Latency and
	// Webhook: the phase starts a fresh worker, which a running
	// deployment would not.
	WarmUpSeconds float64 `json:"warm_up_seconds,omitempty"`
	// Webhook is commit→webhook arrival per event (paced phases).
	Webhook *Latency `json:"webhook,omitempty"`
	// Stages is where publish→result went (paced phases, Config.Stages).
	Stages *Stages `json:"stages,omitempty"`
	// Retried counts retryable error answers (the command was redelivered
	// and then succeeded); Duplicates counts repeated results.
	Retried    int64 `json:"retried"`
	Duplicates int64 `json:"duplicates"`
	// Batches describes the worker's transactions.
	Batches BatchStats `json:"batches"`
	// CPU during the timed window.
	CPU CPU `json:"cpu"`
	// RSS of this process: at the start and end of the phase, and the
	// largest seen in between.
	RSS RSS `json:"rss"`
	// SettleSeconds is how long after the last result the last webhook of
	// the phase was delivered.
	SettleSeconds float64 `json:"settle_seconds"`
	// Cost is what a command cost, from the phase's start until a second
	// after its last webhook was delivered (paced phases).
	Cost *Cost `json:"cost,omitempty"`
	// Rounds are the soak phase's rounds, in order; the phase's figures are
	// their totals (Seconds and SettleSeconds summed, CPU over the rounds'
	// timed windows).
	Rounds []SoakRound `json:"rounds,omitempty"`
}

// RSS is a process's resident set size in bytes.
type RSS struct {
	Start int64 `json:"start_bytes"`
	End   int64 `json:"end_bytes"`
	Max   int64 `json:"max_bytes"`
}

// Latency is a distribution in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func latencyOf(sorted []time.Duration) *Latency {
	if len(sorted) == 0 {
		return &Latency{}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return &Latency{Count: len(sorted), P50: ms(percentile(sorted, 0.50)), P99: ms(percentile(sorted, 0.99)), Max: ms(sorted[len(sorted)-1])}
}

// percentile is the nearest-rank percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(p*float64(len(sorted)) + 0.999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

type phaseStart struct {
	cpu cpuSample
	rss int64
}

func (e *Env) begin(ctx context.Context) phaseStart {
	return phaseStart{rss: e.rss.reset(), cpu: e.readCPU(ctx)}
}

// readCPU samples the machine, this process, the NATS process (when NATS
// runs as one) and the run's Postgres backends.
func (e *Env) readCPU(ctx context.Context) cpuSample {
	var pids []int
	rows, err := e.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err == nil {
		for rows.Next() {
			var pid int
			if rows.Scan(&pid) == nil {
				pids = append(pids, pid)
			}
		}
		rows.Close()
	}
	s := readCPU(pids)
	if e.natsProc != nil {
		s.nats, _ = pidCPU(e.natsProc.pid())
	}
	return s
}

func (e *Env) finish(p *Phase, s phaseStart) {
	end := rss()
	e.rss.observe(end)
	p.RSS = RSS{Start: s.rss, End: end, Max: e.rss.max.Load()}
}

// Peak publishes n invoice.create commands as fast as JetStream takes
// them, with the worker in mode, and measures completed commands per
// second.
func (e *Env) Peak(ctx context.Context, name string, mode Mode, n int) (p Phase, err error) {
	return e.peak(ctx, name, mode, e.invoices(), n)
}

func (e *Env) peak(ctx context.Context, name string, mode Mode, load workload, n int) (p Phase, err error) {
	p = Phase{Name: name, Mode: mode.String(), Commands: n}
	w, err := e.startQuiet(ctx, mode, &p)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, w.stop()) }()
	e.progress("%s: %d commands, %s", name, n, mode)
	s := e.begin(ctx)
	t, err := e.burst(ctx, n, load)
	if err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	p.CPU = cpuBetween(s.cpu, e.readCPU(ctx))
	p.Seconds = t.elapsed().Seconds()
	p.Rate = float64(n) / p.Seconds
	p.Retried, p.Duplicates = t.retried.Load(), t.duplicate.Load()
	p.Batches = w.stats()

	settling := time.Now()
	if err := e.settle(ctx); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	p.SettleSeconds = time.Since(settling).Seconds()
	e.finish(&p, s)
	e.progress("%s: %.0f commands/s", name, p.Rate)
	return p, nil
}

// burst publishes n commands as fast as JetStream takes them and waits for
// every result: the load of a peak phase and of each soak round.
func (e *Env) burst(ctx context.Context, n int, load workload) (*tracker, error) {
	t, sub, err := e.newTracker(n, load)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	for i := range n {
		if err := e.send(t, i); err != nil {
			return t, err
		}
		if i%1024 == 0 && ctx.Err() != nil {
			return t, ctx.Err()
		}
	}
	return t, e.await(ctx, t)
}

// Paced publishes at rate for d on a fixed schedule (each command at its
// slot, however late earlier results are) with group commit, and measures
// publish→result and commit→webhook latency.
func (e *Env) Paced(ctx context.Context, name string, rate float64, d time.Duration) (p Phase, err error) {
	n := max(1, int(rate*d.Seconds()))
	mode := e.cfg.groupMode()
	p = Phase{Name: name, Mode: mode.String(), Commands: n, TargetRate: rate}
	w, err := e.startQuiet(ctx, mode, &p)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, w.stop()) }()
	e.progress("%s: %d commands at %.0f/s for %s", name, n, rate, d)
	interval := float64(time.Second) / rate
	timer := time.NewTimer(0)
	defer timer.Stop()
	costStart := e.readCost(ctx)
	s := e.begin(ctx)
	t, sub, err := e.newTracker(n, e.invoices())
	if err != nil {
		return p, err
	}
	defer sub.Unsubscribe()
	if e.spans != nil {
		t.tag, t.traced = e.spans.track(n), true
	}
	e.recv.record(t.prefix)
	defer e.recv.record("")
	for i := range n {
		if wait := time.Until(t.start.Add(time.Duration(float64(i) * interval))); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return p, ctx.Err()
			}
		}
		if err := e.send(t, i); err != nil {
			return p, err
		}
	}
	if err := e.await(ctx, t); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	p.CPU = cpuBetween(s.cpu, e.readCPU(ctx))
	p.Seconds = t.elapsed().Seconds()
	p.Rate = float64(n) / p.Seconds
	p.Retried, p.Duplicates = t.retried.Load(), t.duplicate.Load()
	warmUp := min(time.Second, d/4)
	p.WarmUpSeconds = warmUp.Seconds()
	p.Latency = latencyOf(t.latencies(warmUp))
	p.Batches = w.stats()

	settling := time.Now()
	if err := e.waitFor(ctx, "webhooks", func(context.Context) (int64, bool, error) {
		// Every event of the phase, warm-up included, so none is still
		// being delivered when the next phase starts.
		got := e.recv.recorded.Load()
		return got, got >= int64(n), nil
	}); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	delays := e.recv.delays(t.start.Add(warmUp))
	slices.Sort(delays)
	p.Webhook = latencyOf(delays)
	if err := e.settle(ctx); err != nil {
		return p, fmt.Errorf("%s: %w", name, err)
	}
	p.SettleSeconds = time.Since(settling).Seconds()
	if e.spans != nil {
		p.Stages = e.spans.stages(t, warmUp)
	}
	p.Cost = e.costBetween(costStart, e.readCost(ctx), n)
	e.finish(&p, s)
	e.progress("%s: publish→result p99 %.1f ms, commit→webhook p99 %.1f ms", name, p.Latency.P99, p.Webhook.P99)
	return p, nil
}

// startQuiet starts a worker in mode for phase p and brings the phase to
// its quiet start (quiesce); the caller stops the worker.
func (e *Env) startQuiet(ctx context.Context, mode Mode, p *Phase) (*worker, error) {
	w, err := e.startWorker(ctx, mode)
	if err != nil {
		return nil, err
	}
	if err := e.quiesce(ctx, p); err != nil {
		return nil, errors.Join(err, w.stop())
	}
	return w, nil
}

// quiesce brings every phase to the same start: nothing left over from
// the phase before, dirty pages written out, so that no phase pays for an
// earlier one's checkpoint. It records the inbox size.
func (e *Env) quiesce(ctx context.Context, p *Phase) error {
	if err := e.settle(ctx); err != nil {
		return err
	}
	// CHECKPOINT needs superuser or pg_checkpoint; without, phases still
	// run, only less alike.
	if _, err := e.pool.Exec(ctx, "CHECKPOINT"); err != nil && !strings.Contains(err.Error(), "permission") {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var err error
	p.InboxKeys, err = e.inboxKeys(ctx)
	return err
}

// Prefilled says how the inbox was filled before the last phase.
type Prefilled struct {
	Keys          int     `json:"keys"`
	Companies     int     `json:"companies"`
	InsertSeconds float64 `json:"insert_seconds"`
	VacuumSeconds float64 `json:"vacuum_seconds"`
	InboxBytes    int64   `json:"inbox_bytes"`
}

const prefillCompanies = 100

// Prefill writes n synthetic keys to the inbox of 100 other companies,
// shaped like invoice.create results and spread over the last six days
// (inside the retention, so the worker's purge leaves them), then vacuums
// and analyzes the table.
func (e *Env) Prefill(ctx context.Context, n int) (Prefilled, error) {
	out := Prefilled{Keys: n, Companies: prefillCompanies}
	tpl, err := resultTemplate()
	if err != nil {
		return out, err
	}
	started := time.Now()
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return out, fmt.Errorf("prefill inbox: %w", err)
	}
	defer conn.Release()
	now := time.Now()
	_, err = inbox.Copy(ctx, conn, n, func(i int) inbox.Row {
		i++
		if i%100_000 == 0 {
			e.progress("prefill: %d of %d keys", i, n)
		}
		company := fmt.Sprintf("prefill-%02d", i%prefillCompanies)
		key := fmt.Sprintf("prefill-%s-%d", e.runID, i)
		fp := sha256.Sum256([]byte(key))
		body := strings.NewReplacer("@company@", company, "@key@", key,
			"@number@", fmt.Sprintf("%06d", i), "@seq@", strconv.Itoa(i)).Replace(tpl)
		return inbox.Row{Company: company, Key: key, Command: new(ledger.CreateInvoice).CommandName(), Fingerprint: fp[:], Status: protocol.StatusOK,
			Result: []byte(body), CreatedAt: now.Add(-time.Duration(i%500000) * time.Second)}
	})
	if err != nil {
		return out, fmt.Errorf("prefill inbox: %w", err)
	}
	out.InsertSeconds = time.Since(started).Seconds()
	started = time.Now()
	if _, err := e.pool.Exec(ctx, `VACUUM ANALYZE inbox`); err != nil {
		return out, fmt.Errorf("vacuum inbox: %w", err)
	}
	out.VacuumSeconds = time.Since(started).Seconds()
	err = e.pool.QueryRow(ctx, `SELECT pg_total_relation_size('inbox')`).Scan(&out.InboxBytes)
	return out, err
}

// resultTemplate is a stored invoice.create result with slots for the
// company, the key, the invoice number and the sequence.
func resultTemplate() (string, error) {
	line := func(desc, qty, price, rate, net, vat, gross string) ledger.InvoiceLineView {
		return ledger.InvoiceLineView{Description: desc, Quantity: qty, UnitPrice: price, VATRate: rate, Net: net, VAT: vat, Gross: gross}
	}
	view, err := json.Marshal(ledger.InvoiceView{
		InvoiceID: "0193a0c4-7e35-7b4e-9c1f-3d2a8f0e5b61", Number: "INV-2026-@number@", Series: "INV", Sequence: 0,
		OrderID:  "@key@",
		Customer: ledger.Party{ID: "cust-42", Name: "UAB Pavyzdys", VATID: "LT100000000010", Country: "LT"},
		Currency: "EUR", IssueDate: "2026-12-02", DueDate: "2026-12-16",
		Lines: []ledger.InvoiceLineView{
			line("Consulting", "3", "100.00", "21", "300.00", "63.00", "363.00"),
			line("Accommodation", "2", "12.50", "12", "25.00", "3.00", "28.00"),
			line("Travel", "1", "80.00", "0", "80.00", "0.00", "80.00"),
		},
		VATBreakdown: []ledger.RateView{{Rate: "21", Net: "300.00", VAT: "63.00"}, {Rate: "12", Net: "25.00", VAT: "3.00"}, {Rate: "0", Net: "80.00", VAT: "0.00"}},
		Net:          "405.00", VAT: "66.00", Gross: "471.00", JournalEntryID: "0193a0c4-7e36-7c2d-8b0a-6e4f1d2c3b5a",
	})
	if err != nil {
		return "", err
	}
	res, err := json.Marshal(protocol.Result{Company: "@company@", IdempotencyKey: "@key@", Command: new(ledger.CreateInvoice).CommandName(), Status: protocol.StatusOK, Result: view})
	if err != nil {
		return "", err
	}
	return strings.Replace(string(res), `"sequence":0`, `"sequence":@seq@`, 1), nil
}
