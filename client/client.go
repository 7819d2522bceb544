package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Config configures a Client. The zero value is ready to use.
type Config struct {
	// AttemptTimeout is how long an attempt waits for the worker's reply
	// before it asks the result lookup; it also bounds one publish.
	// Defaults to 5s.
	AttemptTimeout time.Duration
	// MaxWait bounds one Do or Publish call, all attempts included, unless
	// the context ends first. Then the call returns an error wrapping
	// ErrNoResult. Defaults to 1 minute.
	MaxWait time.Duration
	// MinBackoff is the pause before the second attempt; every further
	// pause doubles, up to MaxBackoff. Each pause is drawn at random between
	// half and all of its nominal length, so producers that failed together
	// do not retry in step. Default to 100ms and 5s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// LookupTimeout bounds one request to the result lookup. Defaults to 2s.
	LookupTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 5 * time.Second
	}
	if c.MaxWait == 0 {
		c.MaxWait = time.Minute
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.LookupTimeout == 0 {
		c.LookupTimeout = 2 * time.Second
	}
}

func (c *Config) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"AttemptTimeout", c.AttemptTimeout}, {"MaxWait", c.MaxWait}, {"MinBackoff", c.MinBackoff}, {"MaxBackoff", c.MaxBackoff}, {"LookupTimeout", c.LookupTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", d.name, d.v))
		}
	}
	if c.MinBackoff > c.MaxBackoff {
		errs = append(errs, fmt.Errorf("MinBackoff %s is above MaxBackoff %s", c.MinBackoff, c.MaxBackoff))
	}
	return errors.Join(errs...)
}

// Client publishes commands over one NATS connection. It is safe for
// concurrent use.
type Client struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config
	// refusals turns the server's permission errors into errors of the
	// calls they concern; mux is the subject of nc's request replies.
	refusals refusals
	mux      string

	// LookupEvery, when set, replaces Config.MinBackoff.
	//
	// Deprecated: set Config.MinBackoff and use NewWithConfig.
	LookupEvery time.Duration

	// loseReplies, set by tests, is how many replies the client drops as
	// if the network had lost them.
	loseReplies atomic.Int32
}

func (c *Client) loseReply() bool {
	for {
		n := c.loseReplies.Load()
		if n <= 0 {
			return false
		}
		if c.loseReplies.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// New returns a client on nc with the default Config.
func New(nc *nats.Conn) (*Client, error) {
	return NewWithConfig(nc, Config{})
}

// NewWithConfig returns a client on nc. It chains a handler of its own
// before nc's error handler (see nats.Conn.SetErrorHandler), which sees the
// server's permission errors so that a refused call fails at once with
// ErrPermissionDenied; nc's handler still receives every error. Make one
// Client per connection and share it: each one adds a handler.
func NewWithConfig(nc *nats.Conn, cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	c := &Client{nc: nc, js: js, cfg: cfg, mux: respMux(nc)}
	c.refusals.install(nc)
	return c, nil
}

// MsgID is the Nats-Msg-Id of a command: JetStream drops a repeat of the
// same company, key and payload inside its duplicate window, while a changed
// payload under the same key still reaches the worker and is refused there
// as idempotency_key_reused.
func MsgID(company, key string, fingerprint []byte) string {
	return company + "/" + key + "/" + hex.EncodeToString(fingerprint[:8])
}

// Do sends cmd for company under key and returns its result. An error
// result comes back as an *Error (see IsCode); any other error means no
// result is known yet, and calling Do again with the same key is safe.
func (c *Client) Do(ctx context.Context, company string, cmd ledger.Command, key string) (protocol.Result, error) {
	body, err := json.Marshal(cmd)
	if err != nil {
		return protocol.Result{}, fmt.Errorf("encode %s: %w", cmd.CommandName(), err)
	}
	res, err := c.Publish(ctx, company, cmd.CommandName(), key, body)
	if err != nil {
		return res, err
	}
	return res, errorOf(res)
}

// Publish is Do for a raw JSON body: it sends the command, retrying with
// the same key, and returns its result. Unlike Do it returns error results
// as a Result with a nil error; the error return means no result is known.
func (c *Client) Publish(ctx context.Context, company, command, key string, body []byte) (protocol.Result, error) {
	return c.send(ctx, company, command, key, body, true)
}

// PublishOnce publishes the command once and returns the first answer: its
// result, or an idempotency_key_in_flight result when another request with
// the key is being processed. A call whose message JetStream stored (not a
// duplicate of an earlier one) waits for that message's own answer: the key
// being in flight then may be its own command still running, or a
// redelivery of its own message meeting it. When ctx ends first it returns
// an error wrapping ErrNoResult. It never publishes again, except to confirm a result
// found by the result lookup (see the package documentation), and leaves
// retrying to its caller: it is for servers, such as the HTTP API, that
// relay the answer to a client who retries.
func (c *Client) PublishOnce(ctx context.Context, company, command, key string, body []byte) (protocol.Result, error) {
	return c.send(ctx, company, command, key, body, false)
}

// Enqueue publishes the command and returns as soon as JetStream has stored
// it, without waiting for its result; Lookup or Await get the result later.
// A body that fails the local check is returned as an *Error.
func (c *Client) Enqueue(ctx context.Context, company, command, key string, body []byte) (*jetstream.PubAck, error) {
	fp, named, perr := check(company, command, key, body)
	if perr != nil {
		return nil, errorOf(protocol.ErrorResult(company, key, command, perr))
	}
	msg := nats.NewMsg(protocol.CommandSubject(company, command))
	msg.Data = body
	msg.Header.Set(protocol.HeaderIdempotencyKey, key)
	msg.Header.Set(jetstream.MsgIDHeader, MsgID(company, named, fp))
	gctx, stop := c.refusals.guard(ctx, msg.Subject, c.mux)
	defer stop()
	ack, err := c.js.PublishMsg(gctx, msg)
	if err != nil {
		return nil, c.publishError(gctx, msg.Subject, err)
	}
	return ack, nil
}

// Lookup asks the worker for the stored result of (company, key) once. The
// answer is the stored result (Replayed set), an idempotency_key_in_flight
// result, or a not_found result with an empty Command: nothing is stored
// for the key, either because no command with it was processed yet or
// because it never existed.
func (c *Client) Lookup(ctx context.Context, company, key string) (protocol.Result, error) {
	req := nats.NewMsg(protocol.ResultSubjectPrefix + company)
	req.Header.Set(protocol.HeaderIdempotencyKey, key)
	gctx, stop := c.refusals.guard(ctx, req.Subject, c.mux)
	defer stop()
	reply, err := c.nc.RequestMsgWithContext(gctx, req)
	if err != nil {
		if r := refused(gctx); r != nil {
			return protocol.Result{}, fmt.Errorf("result lookup on %s: %w", req.Subject, r)
		}
		return protocol.Result{}, fmt.Errorf("result lookup: %w", err)
	}
	var res protocol.Result
	if err := json.Unmarshal(reply.Data, &res); err != nil {
		return protocol.Result{}, fmt.Errorf("decode result: %w", err)
	}
	return res, nil
}

// Await asks the result lookup until the key has a stored result or ctx
// ends. In-flight and not-yet-found answers are waited out: a command that
// is in the stream but not yet processed is not found until it is.
func (c *Client) Await(ctx context.Context, company, key string) (protocol.Result, error) {
	for pause := 0; ; pause++ {
		lctx, cancel := context.WithTimeout(ctx, c.cfg.LookupTimeout)
		res, err := c.Lookup(lctx, company, key)
		cancel()
		switch {
		case err == nil && res.Command != "":
			return res, nil
		case err != nil && !transient(err):
			return protocol.Result{}, err
		}
		select {
		case <-ctx.Done():
			return protocol.Result{}, ctx.Err()
		case <-time.After(c.backoff(pause)):
		}
	}
}

// check applies, in the worker's order, every rule that needs no database:
// company, key, command, JSON, body. It returns the body's fingerprint and
// the key the Idempotency-Key value names (see protocol.ParseKey).
func check(company, command, key string, body []byte) (fp []byte, named string, _ *ledger.Error) {
	if !ledger.ValidCompanyID(company) {
		return nil, "", ledger.Errorf(ledger.CodeInvalidCommand, "company %q is not a valid company id (1-63 of a-z, 0-9, '-', '_')", company)
	}
	named, e := protocol.ParseKey(key)
	if e != nil {
		return nil, "", e
	}
	if !ledger.KnownCommand(command) {
		_, err := ledger.Decode(command, nil)
		return nil, "", asLedgerError(err)
	}
	fp, err := protocol.Fingerprint(command, body)
	if err != nil {
		return nil, "", ledger.Errorf(ledger.CodeInvalidCommand, "%v", err)
	}
	if _, err := ledger.Decode(command, body); err != nil {
		return nil, "", asLedgerError(err)
	}
	return fp, named, nil
}

func asLedgerError(err error) *ledger.Error {
	var e *ledger.Error
	if errors.As(err, &e) {
		return e
	}
	return ledger.Errorf(ledger.CodeInvalidCommand, "%v", err)
}

// backoff returns the n-th pause (from 0), jittered.
func (c *Client) backoff(n int) time.Duration {
	base := c.cfg.MinBackoff
	if c.LookupEvery > 0 {
		base = c.LookupEvery
	}
	d := base
	for i := 0; i < n && d < c.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, max(c.cfg.MaxBackoff, base))
	return d/2 + rand.N(d/2+1)
}

// publishError names what a failed publish means: a refusal, no stream, or
// a transport error. No answer from a stream is also what a clustered
// stream gives while it elects a leader, so it is only "no stream" when
// JetStream says no stream takes the subject; when that cannot be asked
// (a producer without the streams' API) or the stream is there, it is
// transient.
func (c *Client) publishError(ctx context.Context, subject string, err error) error {
	if r := refused(ctx); r != nil {
		return fmt.Errorf("publish to %s: %w", subject, r)
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if _, serr := c.js.StreamNameBySubject(lctx, subject); errors.Is(serr, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("publish to %s: %w (no stream takes the subject: is NATS_URL the worker's server, and has the worker started once?): %w", subject, ErrNoStream, err)
		}
	}
	return fmt.Errorf("publish: %w", err)
}

// transient reports whether a NATS error may go away by itself: no
// responder yet, a timeout, a connection being re-established. A refusal
// and a missing stream are not: retrying only hides them.
func transient(err error) bool {
	return !errors.Is(err, ErrPermissionDenied) && !errors.Is(err, ErrNoStream) &&
		!errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubject) &&
		!errors.Is(err, nats.ErrMaxPayload) && !errors.Is(err, context.Canceled)
}

func (c *Client) send(ctx context.Context, company, command, key string, body []byte, retry bool) (protocol.Result, error) {
	fp, named, perr := check(company, command, key, body)
	if perr != nil {
		return protocol.ErrorResult(company, key, command, perr), nil
	}
	if retry {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.MaxWait)
		defer cancel()
	}
	inbox := c.nc.NewRespInbox()
	ctx, stop := c.refusals.guard(ctx, protocol.CommandSubject(company, command), protocol.ResultSubjectPrefix+company, inbox, c.mux)
	defer stop()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return protocol.Result{}, fmt.Errorf("subscribe to replies: %w", err)
	}
	defer sub.Unsubscribe()
	cl := &call{
		c: c, company: company, command: command, key: key, body: body,
		msgID: MsgID(company, named, fp), inbox: inbox, sub: sub, retry: retry,
	}
	return cl.run(ctx)
}

// call is one Do, Publish or PublishOnce.
type call struct {
	c                     *Client
	company, command, key string
	body                  []byte
	msgID, inbox          string
	sub                   *nats.Subscription
	retry                 bool
	// own is set once JetStream stored a message of this call, not
	// dropped as a duplicate: the worker will answer it.
	own bool
	// dropped is set while the last publish was dropped as a duplicate
	// of a message this call has not seen stored (see run).
	dropped bool

	publishes int
	pauses    int
	confirms  int
	last      string // what the last answer said, for ErrNoResult
}

// lookupState classifies an answer of the result lookup.
type lookupState int

const (
	pending  lookupState = iota // nothing stored yet, or no answer
	inFlight                    // the key is held by a running command
	stored                      // a result is stored for the key
)

func (cl *call) run(ctx context.Context) (protocol.Result, error) {
	publish, confirm := true, false
	for {
		if publish {
			dup, err := cl.publish(ctx, confirm)
			if err != nil {
				if !cl.retry || !transient(err) || ctx.Err() != nil {
					return protocol.Result{}, cl.noResult(ctx, err)
				}
				cl.last = err.Error()
				if res, done, err := cl.wait(ctx, cl.c.backoff(cl.pauses)); done || err != nil {
					return res, err
				}
				cl.pauses++
				continue
			}
			publish, confirm = false, false
			cl.own = cl.own || !dup
			cl.dropped = dup && !cl.own
			if !dup {
				if res, done, err := cl.wait(ctx, cl.c.cfg.AttemptTimeout); done || err != nil {
					return res, err
				}
			}
		}

		// No answer on the reply subject: ask the result lookup.
		res, state, err := cl.lookup(ctx)
		if err != nil {
			return protocol.Result{}, err
		}
		switch state {
		case stored:
			// The lookup answers by key alone; the worker also compares
			// the payload. Confirm under a fresh message ID, at once the
			// first time.
			publish, confirm = true, true
			cl.confirms++
			if cl.confirms == 1 {
				continue
			}
		case inFlight:
			if cl.answersInFlight() {
				return res, nil
			}
			publish = cl.retry
		case pending:
			publish = cl.retry
			if cl.dropped {
				// JetStream dropped the message as a duplicate, yet no
				// command holds or has stored the key: the message ID is
				// another message's. Message IDs are headers, which NATS
				// permissions do not check, so a producer of another
				// company can take the ID of a command it can predict
				// and keep it from ever being stored. Sent again under a
				// message ID of its own, which nobody can predict, the
				// command is stored; if the ID was held by this command's
				// own earlier message, still queued, the worker answers
				// the second one from the inbox.
				publish, confirm = true, true
			}
		}
		if res, done, err := cl.wait(ctx, cl.c.backoff(cl.pauses)); done || err != nil {
			return res, err
		}
		cl.pauses++
	}
}

// publish sends the command once. A confirming publish, and one sent again
// after its message ID was taken, gets a message ID of its own, so
// JetStream does not drop it as a duplicate.
func (cl *call) publish(ctx context.Context, confirm bool) (duplicate bool, err error) {
	id := cl.msgID
	if confirm {
		var nonce [8]byte
		_, _ = crand.Read(nonce[:])
		id += "/" + hex.EncodeToString(nonce[:])
	}
	msg := nats.NewMsg(protocol.CommandSubject(cl.company, cl.command))
	msg.Data = cl.body
	msg.Header.Set(protocol.HeaderIdempotencyKey, cl.key)
	msg.Header.Set(protocol.HeaderReplyTo, cl.inbox)
	msg.Header.Set(jetstream.MsgIDHeader, id)
	pctx, cancel := context.WithTimeout(ctx, cl.c.cfg.AttemptTimeout)
	defer cancel()
	cl.publishes++
	ack, err := cl.c.js.PublishMsg(pctx, msg)
	if err != nil {
		return false, cl.c.publishError(pctx, msg.Subject, err)
	}
	return ack.Duplicate, nil
}

// wait reads the reply subject for up to d. It reports done with the result
// when a final answer arrives (or, for PublishOnce, an in-flight one), and an
// error wrapping ErrNoResult when ctx ends.
func (cl *call) wait(ctx context.Context, d time.Duration) (protocol.Result, bool, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		msg, err := cl.sub.NextMsgWithContext(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return protocol.Result{}, false, cl.noResult(ctx, nil)
			}
			if wctx.Err() != nil {
				return protocol.Result{}, false, nil
			}
			if errors.Is(err, nats.ErrPermissionViolation) {
				return protocol.Result{}, false, fmt.Errorf("receive replies on %s: %w: %w", cl.inbox, ErrPermissionDenied, err)
			}
			return protocol.Result{}, false, fmt.Errorf("read reply: %w", err)
		}
		if cl.c.loseReply() {
			continue
		}
		var res protocol.Result
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			return protocol.Result{}, false, fmt.Errorf("decode result: %w", err)
		}
		if res.Error != nil && res.Error.Code == ledger.CodeIdempotencyKeyInFlight {
			if cl.answersInFlight() {
				return res, true, nil
			}
			// The worker redelivers this message once the key is free and
			// replies again.
			cl.last = "the key was in flight"
			continue
		}
		return res, true, nil
	}
}

// answersInFlight reports whether an in-flight answer ends the call: only
// for PublishOnce, and only while none of its messages was stored. A
// stored message will be answered, and the command in flight may be its
// own.
func (cl *call) answersInFlight() bool {
	return !cl.retry && !cl.own
}

func (cl *call) lookup(ctx context.Context) (protocol.Result, lookupState, error) {
	lctx, cancel := context.WithTimeout(ctx, cl.c.cfg.LookupTimeout)
	res, err := cl.c.Lookup(lctx, cl.company, cl.key)
	cancel()
	switch {
	case ctx.Err() != nil:
		return protocol.Result{}, pending, cl.noResult(ctx, nil)
	case err != nil && !transient(err):
		return protocol.Result{}, pending, err
	case err != nil:
		cl.last = err.Error()
		return res, pending, nil
	case res.Command != "":
		return res, stored, nil
	case res.Error != nil && res.Error.Code == ledger.CodeIdempotencyKeyInFlight:
		cl.last = "the key was in flight"
		return res, inFlight, nil
	}
	cl.last = "no result was stored yet"
	if res.Error != nil {
		cl.last += " (" + res.Error.Message + ")"
	}
	return res, pending, nil
}

func (cl *call) noResult(ctx context.Context, err error) error {
	if r := refused(ctx); r != nil {
		return fmt.Errorf("%s key %q for %s: %w", cl.command, cl.key, cl.company, r)
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	last := cl.last
	if last == "" {
		last = "no answer"
	}
	return fmt.Errorf("%w: %s key %q for %s, %d publish(es), last: %s: %w",
		ErrNoResult, cl.command, cl.key, cl.company, cl.publishes, last, context.Cause(ctx))
}
