//go:build faults

package groupcommit

import (
	"context"
	"math/rand/v2"
	"os"
	"syscall"
	"time"
)

// ackBeforeCommit is the fault point ack_before_commit: a worker that
// acknowledges before it commits, the bug the inbox-after-commit order
// exists to prevent. With the point's probability it acknowledges every
// message of the executed batch (DoubleAck, so the server has the acks) and
// then dies before the commit: JetStream forgets the messages and the
// database never had them. The fault-injection suite must catch this; its
// test runs the suite against this point and expects violations.
func ackBeforeCommit(batch []*Submission) {
	p := faultPoints()["ack_before_commit"]
	if p == 0 || rand.Float64() >= p {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range batch {
		if s.Delivery != nil && s.Delivery.Msg != nil {
			_ = s.Delivery.Msg.DoubleAck(ctx)
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
