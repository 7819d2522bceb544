//go:build !faults

package consumer

// Without the faults build tag the fault points compile to nothing.
func crashAt(string) {}
