package transport

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// run hands one delivery to RouterHandler(h, failed) and returns what the
// subscriber would receive: the settlement, and whether one was handed over.
func run(t *testing.T, h Handler, failed FailurePolicy) (Settlement, bool) {
	t.Helper()
	d := &Delivery{NumDelivered: 3, decided: make(chan Settlement, 1)}
	msg := message.NewMessage("1", nil)
	msg.SetContext(withDelivery(context.Background(), d))
	if err := RouterHandler(h, failed)(msg); err != nil {
		t.Fatalf("router handler: %v", err)
	}
	select {
	case s := <-d.decided:
		return s, true
	default:
		return Settlement{}, false
	}
}

func TestRouterHandlerHandsOverTheHandlersSettlement(t *testing.T) {
	failed := func(context.Context, *Delivery, Settlement, error) Settlement {
		t.Fatal("the failure policy ran for a handler that succeeded")
		return Settlement{}
	}
	s, ok := run(t, func(context.Context, *Delivery) (Settlement, error) { return Ack([]byte("r")), nil }, failed)
	if !ok || s.Action != ActAck || string(s.Reply) != "r" {
		t.Fatalf("settlement %+v (handed over %v), want ack with reply r", s, ok)
	}
}

func TestRouterHandlerGivesFailuresToThePolicy(t *testing.T) {
	boom := errors.New("boom")
	var sawProposed Settlement
	var sawErr error
	failed := func(_ context.Context, d *Delivery, proposed Settlement, err error) Settlement {
		sawProposed, sawErr = proposed, err
		return Term("dead", proposed.Reply)
	}
	s, ok := run(t, func(context.Context, *Delivery) (Settlement, error) {
		return Nak(time.Second, []byte("in flight")), boom
	}, failed)
	if !errors.Is(sawErr, boom) || sawProposed.Action != ActNak || sawProposed.Delay != time.Second {
		t.Fatalf("policy saw %+v, %v; want the handler's NAK and its error", sawProposed, sawErr)
	}
	if !ok || s.Action != ActTerm || s.Reason != "dead" || string(s.Reply) != "in flight" {
		t.Fatalf("settlement %+v (handed over %v), want the policy's", s, ok)
	}
}

// A panic in the handler path is caught by Watermill's Recoverer and is a
// failure the policy sees, with the panic's value in the error.
func TestRouterHandlerRecoversAPanic(t *testing.T) {
	var sawErr error
	failed := func(_ context.Context, _ *Delivery, _ Settlement, err error) Settlement {
		sawErr = err
		return Nak(5*time.Second, nil)
	}
	s, ok := run(t, func(context.Context, *Delivery) (Settlement, error) { panic("handler bug") }, failed)
	if sawErr == nil || !strings.Contains(sawErr.Error(), "handler bug") {
		t.Fatalf("policy saw %v, want the panic", sawErr)
	}
	if !ok || s.Action != ActNak || s.Delay != 5*time.Second {
		t.Fatalf("settlement %+v (handed over %v), want the policy's NAK", s, ok)
	}
}
