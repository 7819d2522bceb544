package pglisten

import (
	"context"
	"testing"
	"time"
)

// Gather waits its time and takes the wake-ups sent meanwhile, so the look
// after it is not followed by a second one for commits it already covers;
// a wake-up sent after it stays.
func TestGatherTakesTheWakeUpsItCovers(t *testing.T) {
	t.Parallel()
	var l Local
	a, b := l.Listen(), l.Listen()
	go func() {
		time.Sleep(5 * time.Millisecond)
		l.Poke()
	}()
	start := time.Now()
	Gather(context.Background(), 50*time.Millisecond, a, b)
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("gathered for %s, want 50ms", waited)
	}
	for i, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
			t.Fatalf("listener %d still holds a wake-up the gathering covered", i)
		default:
		}
	}
	l.Poke()
	for i, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatalf("listener %d lost a wake-up sent after the gathering", i)
		}
	}
	// Not positive: no wait, and the wake-ups stay.
	l.Poke()
	start = time.Now()
	Gather(context.Background(), -1, a)
	if waited := time.Since(start); waited > 10*time.Millisecond {
		t.Fatalf("a negative gather waited %s", waited)
	}
	select {
	case <-a:
	default:
		t.Fatal("a negative gather took a wake-up")
	}
}
