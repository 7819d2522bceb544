//go:build faults

package groupcommit

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Fault injection for the fault-injection suite, compiled in only with
// -tags faults. ONCELEDGER_FAULTS holds comma-separated point=probability
// pairs; at a point the process kills itself with SIGKILL with that
// probability, leaving no chance to clean up, as a crash would:
//
//	after_commit   a batch committed, its messages are neither acked nor answered
//	before_commit  a batch executed, nothing committed
//
// and one point that breaks the guarantee on purpose, so the fault-injection
// suite can show it catches a broken build (see faults_broken.go):
//
//	ack_before_commit  a batch executed and its messages acked, nothing committed
var faultPoints = sync.OnceValue(func() map[string]float64 {
	points := map[string]float64{}
	spec := os.Getenv("ONCELEDGER_FAULTS")
	if spec == "" {
		return points
	}
	for _, part := range strings.Split(spec, ",") {
		name, p, ok := strings.Cut(strings.TrimSpace(part), "=")
		prob, err := strconv.ParseFloat(p, 64)
		if !ok || err != nil || prob < 0 || prob > 1 || !knownFaultPoints[name] {
			fmt.Fprintf(os.Stderr, "ONCELEDGER_FAULTS: %q is not point=probability with point after_commit, before_commit or ack_before_commit\n", part)
			os.Exit(2)
		}
		points[name] = prob
	}
	return points
})

var knownFaultPoints = map[string]bool{"after_commit": true, "before_commit": true, "ack_before_commit": true}

func crashAt(point string) {
	if p := faultPoints()[point]; p > 0 && rand.Float64() < p {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}
