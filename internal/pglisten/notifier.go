package pglisten

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Notifier sends NOTIFYs on behalf of transactions that committed, in
// transactions of its own. A transaction that sends NOTIFY itself holds a
// database-wide lock from the start of its commit until its commit record
// is flushed, which serialises every such commit, so a writer with many
// concurrent transactions pokes a Notifier after each commit instead: the
// notification travels in a transaction that writes nothing, and pokes
// that arrive while one is sent are coalesced into the next.
type Notifier struct {
	pool     *pgxpool.Pool
	channels []string
	logger   *slog.Logger
	poke     chan struct{}
	stop     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// NewNotifier starts a notifier for channels on pool. Close stops it.
func NewNotifier(pool *pgxpool.Pool, logger *slog.Logger, channels ...string) *Notifier {
	n := &Notifier{pool: pool, channels: channels, logger: logger, poke: make(chan struct{}, 1), stop: make(chan struct{})}
	n.wg.Add(1)
	go n.loop()
	return n
}

// Poke asks for one notification on every channel, soon; it never blocks.
func (n *Notifier) Poke() {
	select {
	case n.poke <- struct{}{}:
	default:
	}
}

// Close sends a pending notification and stops.
func (n *Notifier) Close() {
	n.once.Do(func() { close(n.stop) })
	n.wg.Wait()
}

func (n *Notifier) loop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.poke:
			n.send()
		case <-n.stop:
			select {
			case <-n.poke:
				n.send()
			default:
			}
			return
		}
	}
}

func (n *Notifier) send() {
	// A lost notification only delays the listeners until they poll.
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	if _, err := n.pool.Exec(ctx, `SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c`, n.channels); err != nil {
		n.logger.Debug("NOTIFY failed; listeners will poll", "channels", n.channels, "error", err)
	}
}

// notifyTimeout bounds one notification.
const notifyTimeout = 5 * time.Second
