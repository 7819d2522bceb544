package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/onceledger/onceledger/internal/freeport"
)

// Ports come from below the ephemeral range, are free, and are not handed
// out twice; one that something listens on is never returned.
func TestPick(t *testing.T) {
	seen := map[int]bool{}
	var held []net.Listener
	t.Cleanup(func() {
		for _, l := range held {
			l.Close()
		}
	})
	for range 300 {
		p, err := freeport.Pick()
		if err != nil {
			t.Fatal(err)
		}
		if p < freeport.First || p > freeport.Last || seen[p] {
			t.Fatalf("port %d: outside [%d, %d] or given twice", p, freeport.First, freeport.Last)
		}
		seen[p] = true
		// Held from now on: a later pick that returned it would fail here.
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d was picked but cannot be bound: %v", p, err)
		}
		held = append(held, l)
	}
}
