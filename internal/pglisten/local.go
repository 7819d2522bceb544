package pglisten

import "sync"

// Local wakes listeners in this process, as a NOTIFY wakes listeners in
// any: a worker whose relay and dispatcher run beside its consumer wakes
// them after a commit without a round trip to Postgres. Each listener's
// channel holds one pending wake, so pokes coalesce and Poke never
// blocks. The database stays the source of truth: a wake only says
// "look now", and listeners still poll.
type Local struct {
	mu   sync.Mutex
	subs []chan struct{}
}

// Listen returns a new listener's channel.
func (l *Local) Listen() <-chan struct{} {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	l.subs = append(l.subs, ch)
	l.mu.Unlock()
	return ch
}

// Poke wakes every listener; it never blocks.
func (l *Local) Poke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range l.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
