package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Exit status of publish when no result is known: NATS unreachable, or no
// result within -timeout. Publishing again with the same -key is safe.
const exitNoResult = 3

// exitNotRun is publish's exit status when nothing was published and
// nothing will run: bad usage, an unreadable FILE, credentials or
// permissions the NATS server refuses, no command stream on the server.
// Trying again as it is cannot succeed.
const exitNotRun = 2

// connectRetry is how long publish waits between attempts to reach NATS.
const connectRetry = 250 * time.Millisecond

// sleepCtx waits d, and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func cmdPublish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn natsFlags
	conn.register(fs)
	company := fs.String("company", "", "company id, the <company> of ledger.cmd.<company>.<command> (required)")
	command := fs.String("command", "", "command, e.g. invoice.create (required; one of "+strings.Join(ledger.CommandNames(), ", ")+")")
	key := fs.String("key", "", "Idempotency-Key: one per logical operation, the same for every retry of it (required)")
	wait := fs.Bool("wait", true, "wait for the result and print it; -wait=false prints JetStream's acknowledgement only")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the result, retrying with the same key")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: onceledger publish -company ID -command NAME -key KEY [-wait] [FILE|-]

Publishes the command body read from FILE (or stdin) with the Idempotency-Key
KEY and prints its result. While no result comes it asks the result lookup
and publishes again, always with the same key, until -timeout.

Exit status: 0 for an ok result; 1 for an error result; 2 when nothing was
published and nothing will run: bad usage, an unreadable FILE, credentials
or permissions the NATS server refuses (a user of one company publishing
for another), no command stream on the server (NATS_URL names another
server); 3 when no result is known (NATS unreachable, or none within
-timeout): the command may still run, and publishing again with the same
-key is safe.

`)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	switch {
	case *company == "":
		return &usageError{"-company is required"}
	case *command == "":
		return &usageError{"-command is required"}
	case *key == "":
		return &usageError{"-key is required: pick one per logical operation (e.g. order-1041-invoice) and reuse it for retries"}
	case fs.NArg() > 1:
		return &usageError{"at most one FILE"}
	case *timeout <= 0:
		return &usageError{"-timeout must be positive"}
	}
	var body []byte
	var err error
	if fs.NArg() == 0 || fs.Arg(0) == "-" {
		body, err = io.ReadAll(stdin)
	} else {
		body, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return &usageError{fmt.Sprintf("read command body: %v", err)}
	}
	if errs := conn.validate(); len(errs) > 0 {
		return &usageError{errors.Join(errs...).Error()}
	}
	// NATS not up yet (a worker starting beside this call) is waited for
	// within -timeout, as a lost reply is; credentials the server refuses
	// are not retried.
	deadline := time.Now().Add(*timeout)
	report := nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		// A refusal is the call's own error, said once, below.
		if !errors.Is(err, nats.ErrPermissionViolation) {
			fmt.Fprintf(stderr, "onceledger publish: %v\n", err)
		}
	})
	nc, err := conn.connect("onceledger publish", report)
	for err != nil && !authRefused(err) && time.Now().Add(connectRetry).Before(deadline) && sleepCtx(ctx, connectRetry) {
		nc, err = conn.connect("onceledger publish", report)
	}
	if err != nil {
		if authRefused(err) {
			fmt.Fprintf(stderr, "onceledger publish: %v: the server refuses these credentials; nothing was published\n", err)
			return &exitError{code: exitNotRun}
		}
		fmt.Fprintf(stderr, "onceledger publish: %v; publishing again with the same -key is safe\n", err)
		return &exitError{code: exitNoResult}
	}
	defer nc.Close()
	cl, err := client.NewWithConfig(nc, client.Config{MaxWait: max(time.Until(deadline), time.Millisecond)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	if !*wait {
		ack, err := cl.Enqueue(ctx, *company, *command, *key, body)
		var ce *client.Error
		switch {
		case errors.As(err, &ce):
			return printResult(stdout, ce.Result)
		case notRun(err):
			return sayNotRun(stderr, err)
		case err != nil:
			fmt.Fprintf(stderr, "onceledger publish: %v; publishing again with the same -key is safe\n", err)
			return &exitError{code: exitNoResult}
		}
		out, _ := json.MarshalIndent(struct {
			Company        string `json:"company"`
			IdempotencyKey string `json:"idempotency_key"`
			Command        string `json:"command"`
			Stream         string `json:"stream"`
			Sequence       uint64 `json:"sequence"`
			Duplicate      bool   `json:"duplicate"`
		}{*company, *key, *command, ack.Stream, ack.Sequence, ack.Duplicate}, "", "  ")
		fmt.Fprintln(stdout, string(out))
		return nil
	}

	res, err := cl.Publish(ctx, *company, *command, *key, body)
	if err != nil {
		if notRun(err) {
			return sayNotRun(stderr, err)
		}
		if errors.Is(err, client.ErrNoResult) {
			fmt.Fprintf(stderr, "onceledger publish: no result within %s; the command may still run: publish again with the same -key to get its result\n", *timeout)
		} else {
			fmt.Fprintf(stderr, "onceledger publish: %v; publishing again with the same -key is safe\n", err)
		}
		return &exitError{code: exitNoResult}
	}
	return printResult(stdout, res)
}

// sayNotRun prints why nothing ran, with what to change where the fix is
// known.
func sayNotRun(stderr io.Writer, err error) error {
	hint := ""
	if errors.Is(err, client.ErrPermissionDenied) && strings.Contains(err.Error(), "Subscription to") {
		hint = "; this user receives replies under a prefix of its own: set NATS_INBOX_PREFIX (-nats-inbox-prefix), e.g. _INBOX_<company>"
	}
	fmt.Fprintf(stderr, "onceledger publish: %v%s\n", err, hint)
	return &exitError{code: exitNotRun}
}

// notRun reports whether err says the command never reached the stream
// and never will as things stand.
func notRun(err error) bool {
	return errors.Is(err, client.ErrPermissionDenied) || errors.Is(err, client.ErrNoStream)
}

// printResult prints a result; an error result exits 1.
func printResult(stdout io.Writer, res protocol.Result) error {
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if res.Status != protocol.StatusOK {
		return &exitError{code: 1}
	}
	return nil
}
