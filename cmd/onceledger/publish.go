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
)

func cmdPublish(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats-url", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env NATS_URL)")
	company := fs.String("company", "", "company id, the <company> of ledger.cmd.<company>.<command> (required)")
	command := fs.String("command", "", "command, e.g. invoice.create (required; one of "+strings.Join(ledger.CommandNames(), ", ")+")")
	key := fs.String("key", "", "Idempotency-Key: one per logical operation, the same for every retry of it (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the result")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: onceledger publish -company ID -command NAME -key KEY [FILE|-]

Publishes the command body read from FILE (or stdin) and prints its result.
Exit status: 0 for an ok result, 1 for an error result, 2 for bad usage.
Retrying with the same -key is always safe: it returns the first result.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
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
	}
	var body []byte
	var err error
	if fs.NArg() == 0 || fs.Arg(0) == "-" {
		body, err = io.ReadAll(stdin)
	} else {
		body, err = os.ReadFile(fs.Arg(0))
	}
	if err != nil {
		return fmt.Errorf("read command body: %w", err)
	}
	nc, err := nats.Connect(*natsURL, nats.Name("onceledger publish"))
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", *natsURL, err)
	}
	defer nc.Close()
	cl, err := client.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := cl.Publish(ctx, *company, *command, *key, body)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no result within %s; the command may still be processed: run the same publish again (same -key) to get its result", *timeout)
		}
		return err
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if res.Status != ledger.StatusOK {
		return &exitError{code: 1}
	}
	return nil
}
