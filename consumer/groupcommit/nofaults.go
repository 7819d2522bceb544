//go:build !faults

package groupcommit

// Without the faults build tag the fault points compile to nothing.
func crashAt(string) {}

// ackBeforeCommit is a deliberately broken ack order, compiled in only with
// -tags faults (faults_broken.go); here it is nothing.
func ackBeforeCommit([]*Submission) {}
