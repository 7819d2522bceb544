package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
)

// Handler is the handler path of one delivery. It returns the settlement
// of a command that is done, or a failure: then err says why, and the
// settlement carries what a retry keeps, the reply to send meanwhile and,
// when its Action is ActNak, the delay it asks for instead of the backoff.
type Handler func(ctx context.Context, d *Delivery) (Settlement, error)

// FailurePolicy turns a failed delivery into its settlement: a retry, or a
// dead letter once the message can never succeed or has used up its
// deliveries.
type FailurePolicy func(ctx context.Context, d *Delivery, proposed Settlement, err error) Settlement

// RouterHandler is the router's handler of commands, where Watermill's
// router hands a delivery to the handler path and the path's settlement
// goes back to the subscriber. h runs under Watermill's Recoverer, so a
// panic anywhere in the handler path (a hook, parsing, a command's kind) is
// a failure like any other: retried, and dead-lettered with the panic and
// its stack once the deliveries are used up. failed decides what a failure
// becomes. The settlement is handed over once, on the delivery's decided
// channel, and the router is told the message was handled; the subscriber
// settles it when the router acknowledges it. Should anything here panic
// after all, the router's own Recoverer NAKs it, and the subscriber, with
// no settlement handed over, NAKs the message with the backoff.
func RouterHandler(h Handler, failed FailurePolicy) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		d, ok := deliveryFrom(msg)
		if !ok {
			return errors.New("transport: message did not come from the transport's subscriber")
		}
		var s Settlement
		_, err := middleware.Recoverer(func(m *message.Message) ([]*message.Message, error) {
			var err error
			s, err = h(m.Context(), d)
			return nil, err
		})(msg)
		if err != nil {
			s = failed(msg.Context(), d, s, err)
		}
		d.decided <- s
		return nil
	}
}

// NewRouter returns the Watermill router that runs the handler path for
// every delivery sub hands out: one handler, RouterHandler over h and
// failed, behind Watermill's Recoverer as a backstop. Its Close stops sub
// from pulling and waits, at most closeTimeout, for the handlers running.
// The router logs to logger; it reports every handler error at error
// level, so its levels are lowered: the handler path logs its failures
// itself.
func NewRouter(sub *Subscriber, topic string, h Handler, failed FailurePolicy, closeTimeout time.Duration, logger *slog.Logger) (*message.Router, error) {
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: closeTimeout}, watermill.NewSlogLoggerWithLevelMapping(logger, map[slog.Level]slog.Level{
		slog.LevelError: slog.LevelWarn,
		slog.LevelInfo:  slog.LevelDebug,
	}))
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	router.AddMiddleware(middleware.Recoverer)
	router.AddNoPublisherHandler("commands", topic, sub, RouterHandler(h, failed))
	return router, nil
}
