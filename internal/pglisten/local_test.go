package pglisten

import "testing"

// Pokes coalesce per listener, reach every listener, and never block.
func TestLocalWakesEveryListenerOnce(t *testing.T) {
	var l Local
	a, b := l.Listen(), l.Listen()
	for range 3 {
		l.Poke()
	}
	for name, ch := range map[string]<-chan struct{}{"a": a, "b": b} {
		select {
		case <-ch:
		default:
			t.Fatalf("listener %s was not woken", name)
		}
		select {
		case <-ch:
			t.Fatalf("listener %s was woken twice for pokes before it looked", name)
		default:
		}
	}
}
