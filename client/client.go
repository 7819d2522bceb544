// Package client publishes commands to onceledger and waits for their
// results.
//
// The one rule a producer must follow: one idempotency key per logical
// operation, generated once (or derived from a domain ID, such as
// "order-1041-invoice") and reused for every retry of that operation. A new
// key per attempt makes every retry a new operation; a hash of the payload
// makes two legitimate identical operations collide. Publish retries with the
// same key by design.
package client

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/ledger"
)

// Client publishes commands over one NATS connection.
type Client struct {
	nc *nats.Conn
	js jetstream.JetStream
	// LookupEvery is how often the result lookup is asked while a result is
	// not available. Defaults to 250ms.
	LookupEvery time.Duration
}

// New returns a client on nc.
func New(nc *nats.Conn) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	return &Client{nc: nc, js: js, LookupEvery: 250 * time.Millisecond}, nil
}

// MsgID is the Nats-Msg-Id of a command: JetStream drops a repeat of the
// same company, key and payload inside its duplicate window, while a changed
// payload under the same key still reaches the worker and is refused there
// as idempotency_key_reused.
func MsgID(company, key string, fingerprint []byte) string {
	return company + "/" + key + "/" + hex.EncodeToString(fingerprint[:8])
}

// Publish sends a command and waits until its result is known or ctx ends.
// A result with status "error" is returned as a Result, not as an error;
// the error return is for transport failures and ctx expiry.
func (c *Client) Publish(ctx context.Context, company, command, key string, body []byte) (ledger.Result, error) {
	fp, err := ledger.Fingerprint(command, body)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("command body: %w", err)
	}
	inbox := c.nc.NewRespInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return ledger.Result{}, err
	}
	defer sub.Unsubscribe()

	msg := nats.NewMsg(ledger.CommandSubject(company, command))
	msg.Data = body
	msg.Header.Set(ledger.HeaderIdempotencyKey, key)
	msg.Header.Set(ledger.HeaderReplyTo, inbox)
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(company, key, fp))
	ack, err := c.js.PublishMsg(ctx, msg)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("publish: %w", err)
	}
	if ack.Duplicate {
		// The stream already holds this command: the reply went to the
		// first publisher. Ask the inbox.
		return c.Await(ctx, company, key)
	}
	for {
		// Wait a while for the reply, then fall back to the lookup: a reply
		// may be lost, the lookup answers from the inbox.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		reply, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ledger.Result{}, ctx.Err()
			}
			return c.Await(ctx, company, key)
		}
		var res ledger.Result
		if err := json.Unmarshal(reply.Data, &res); err != nil {
			return ledger.Result{}, fmt.Errorf("decode result: %w", err)
		}
		if res.Error != nil && res.Error.Code == ledger.CodeIdempotencyKeyInFlight {
			continue // the worker retries the delivery and replies again
		}
		return res, nil
	}
}

// Lookup asks the worker for the stored result of (company, key) once.
func (c *Client) Lookup(ctx context.Context, company, key string) (ledger.Result, error) {
	req := nats.NewMsg(ledger.ResultSubjectPrefix + company)
	req.Header.Set(ledger.HeaderIdempotencyKey, key)
	reply, err := c.nc.RequestMsgWithContext(ctx, req)
	if err != nil {
		return ledger.Result{}, fmt.Errorf("result lookup: %w", err)
	}
	var res ledger.Result
	if err := json.Unmarshal(reply.Data, &res); err != nil {
		return ledger.Result{}, fmt.Errorf("decode result: %w", err)
	}
	return res, nil
}

// Await asks the result lookup until the key has a result or ctx ends.
// In-flight and not-yet-found answers are waited out: a command that is in
// the stream but not yet processed is not found until it is.
func (c *Client) Await(ctx context.Context, company, key string) (ledger.Result, error) {
	for {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := c.Lookup(lctx, company, key)
		cancel()
		switch {
		case err == nil && !pending(res):
			return res, nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout):
			return ledger.Result{}, err
		}
		select {
		case <-ctx.Done():
			return ledger.Result{}, ctx.Err()
		case <-time.After(c.LookupEvery):
		}
	}
}

func pending(r ledger.Result) bool {
	return r.Error != nil && (r.Error.Code == ledger.CodeIdempotencyKeyInFlight || r.Error.Code == ledger.CodeNotFound)
}
