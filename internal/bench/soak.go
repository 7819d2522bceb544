package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/onceledger/onceledger/consumer/inbox"
)

// SoakRound is what one round of the soak measured. The memory figures are
// read once the round has settled (every command acknowledged, every event
// published, every webhook delivered), so they hold what the worker keeps,
// not a backlog it is still working through.
type SoakRound struct {
	Commands int `json:"commands"`
	// InboxKeys is how many keys the inbox held when the round started.
	InboxKeys int64 `json:"inbox_keys"`
	// Seconds from the round's first publish to its last result.
	Seconds float64 `json:"seconds"`
	// Rate is Commands / Seconds.
	Rate float64 `json:"commands_per_second"`
	// SettleSeconds is how long after the last result the round's last
	// webhook was delivered.
	SettleSeconds float64 `json:"settle_seconds"`
	// RSSMax is the largest RSS sampled during the round, settling
	// included; RSSSettled is the RSS once the round had settled.
	RSSMax     int64 `json:"rss_max_bytes"`
	RSSSettled int64 `json:"rss_settled_bytes"`
	// HeapLive is the Go heap the latest garbage collection found live,
	// read once the round had settled. The bench does not force a
	// collection, which would make the process unlike a running worker;
	// the heap's bytes in use would count garbage not yet collected too, up
	// to as much again as the live heap, depending only on when the reading
	// falls in the collection cycle.
	HeapLive int64 `json:"heap_live_bytes"`
	// HeapWorker is the part of HeapLive not allocated by the embedded
	// NATS server, estimated from the heap profile's samples: the worker,
	// the load generator and the receiver. The NATS server keeps, among
	// other things, every message ID of the last two minutes for its
	// duplicate detection, tens of MiB at these rates, which a deployment
	// holds in the NATS server's process, not the worker's.
	HeapWorker int64 `json:"heap_worker_bytes"`
	// Goroutines of the process once the round had settled, so a leak of
	// goroutines shows as a count that grows round after round.
	Goroutines int `json:"goroutines"`
}

// Soak sends n invoice.create commands through one worker in group-commit
// mode, in rounds of n/rounds commands. Each round is published as fast as
// JetStream takes it, and settles before the process's memory is read and
// the next round starts. The other phases start a worker each, so whatever
// a worker keeps is freed between them; here one worker lives through every
// round, and what it keeps from one command to the next accumulates.
func (e *Env) Soak(ctx context.Context, n, rounds int) (p Phase, err error) {
	if rounds < 1 || n < rounds {
		return p, fmt.Errorf("%w: soak of %d commands in %d rounds: at least one round, and one command per round", ErrConfig, n, rounds)
	}
	mode := e.cfg.groupMode()
	p = Phase{Name: PhaseSoak, Mode: mode.String(), Commands: n}
	w, err := e.startQuiet(ctx, mode, &p)
	if err != nil {
		return p, err
	}
	defer func() { err = errors.Join(err, w.stop()) }()
	e.progress("%s: %d commands in %d rounds through one worker, %s", PhaseSoak, n, rounds, mode)
	p.RSS.Start = e.rss.reset()
	p.RSS.Max = p.RSS.Start
	var cpu cpuWindows
	for i := range rounds {
		// Rounds differ by one command at most, so the first and the last
		// compare like with like.
		r := SoakRound{Commands: n / rounds, InboxKeys: p.InboxKeys}
		if i < n%rounds {
			r.Commands++
		}
		if i > 0 {
			if r.InboxKeys, err = e.inboxKeys(ctx); err != nil {
				return p, err
			}
		}
		s := e.begin(ctx)
		t, err := e.burst(ctx, r.Commands, e.invoices())
		if err != nil {
			return p, fmt.Errorf("%s round %d of %d: %w", PhaseSoak, i+1, rounds, err)
		}
		cpu.add(s.cpu, e.readCPU(ctx))
		r.Seconds = t.elapsed().Seconds()
		r.Rate = float64(r.Commands) / r.Seconds
		p.Retried += t.retried.Load()
		p.Duplicates += t.duplicate.Load()

		settling := time.Now()
		if err := e.settle(ctx); err != nil {
			return p, fmt.Errorf("%s round %d of %d: %w", PhaseSoak, i+1, rounds, err)
		}
		r.SettleSeconds = time.Since(settling).Seconds()
		r.RSSSettled = rss()
		e.rss.observe(r.RSSSettled)
		r.RSSMax = e.rss.max.Load()
		r.HeapLive = heapLive()
		r.HeapWorker = heapNotFrom(natsServerPackage)
		r.Goroutines = runtime.NumGoroutine()

		p.Rounds = append(p.Rounds, r)
		p.Seconds += r.Seconds
		p.SettleSeconds += r.SettleSeconds
		p.RSS.End = r.RSSSettled
		p.RSS.Max = max(p.RSS.Max, r.RSSMax)
		e.progress("%s: round %d of %d: %.0f commands/s, RSS max %.0f MiB, settled %.0f MiB, Go heap %.1f MiB (%.1f MiB outside the NATS server), %d goroutines",
			PhaseSoak, i+1, rounds, r.Rate, mib(r.RSSMax), mib(r.RSSSettled), mib(r.HeapLive), mib(r.HeapWorker), r.Goroutines)
	}
	p.Rate = float64(n) / p.Seconds
	p.CPU = cpu.mean()
	p.Batches = w.stats()
	return p, nil
}

// inboxKeys counts the inbox's keys.
func (e *Env) inboxKeys(ctx context.Context) (int64, error) {
	st, err := inbox.ReadStats(ctx, e.pool, "")
	if err != nil {
		return 0, fmt.Errorf("count inbox keys: %w", err)
	}
	return st.Keys, nil
}

// heapLive is the Go heap the latest garbage collection marked live, in
// bytes, or 0 where the runtime does not report it.
func heapLive() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// natsServerPackage is the import path of the embedded NATS server.
const natsServerPackage = "github.com/nats-io/nats-server/"

// heapNotFrom estimates the bytes in use, as of the latest garbage
// collection, of the heap objects whose allocation stack has no function of
// the package with import path prefix. The runtime samples about one
// allocation per runtime.MemProfileRate bytes; each sample is scaled up as
// pprof scales it.
func heapNotFrom(prefix string) int64 {
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, false)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	rate := float64(runtime.MemProfileRate)
	var total float64
	for i := range recs {
		r := &recs[i]
		objects := r.InUseObjects()
		if objects == 0 || fromPackage(r.Stack(), prefix) {
			continue
		}
		bytes := float64(r.InUseBytes())
		if rate > 1 {
			size := bytes / float64(objects)
			bytes /= 1 - math.Exp(-size/rate)
		}
		total += bytes
	}
	return int64(total)
}

// fromPackage reports whether any frame of stack is a function of the
// package with import path prefix.
func fromPackage(stack []uintptr, prefix string) bool {
	frames := runtime.CallersFrames(stack)
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, prefix) {
			return true
		}
		if !more {
			return false
		}
	}
}

// cpuWindows is the CPU over several timed windows, each weighted by its
// length: the soak's CPU covers its rounds from first publish to last
// result, as a peak phase's does, and leaves out the settling between them.
type cpuWindows struct {
	sum  CPU // each field times its window's seconds
	wall float64
}

func (c *cpuWindows) add(a, b cpuSample) {
	w := b.at.Sub(a.at).Seconds()
	if w <= 0 {
		return
	}
	x := cpuBetween(a, b)
	c.sum.MachineBusy += w * x.MachineBusy
	c.sum.MachineIOWait += w * x.MachineIOWait
	c.sum.ProcessCores += w * x.ProcessCores
	c.sum.PostgresCores += w * x.PostgresCores
	c.sum.OtherCores += w * x.OtherCores
	c.wall += w
}

func (c *cpuWindows) mean() CPU {
	if c.wall == 0 {
		return CPU{}
	}
	return CPU{
		MachineBusy:   c.sum.MachineBusy / c.wall,
		MachineIOWait: c.sum.MachineIOWait / c.wall,
		ProcessCores:  c.sum.ProcessCores / c.wall,
		PostgresCores: c.sum.PostgresCores / c.wall,
		OtherCores:    c.sum.OtherCores / c.wall,
	}
}
