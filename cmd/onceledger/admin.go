package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/ops"
)

const adminUsage = `Usage: onceledger admin <verb> [flags]

Inspects idempotency keys and dead letters; replays and closes dead letters.

Verbs:
  key -company ID -key KEY   the inbox row of a key: command, status, fingerprint,
                             stream sequence, when, and the stored result
  dlq list [-limit 50]       dead letters in LEDGER_DLQ, oldest first
  dlq show SEQ               one dead letter: its headers and body
  dlq replay SEQ             publish it again, with its original headers, to its
                             original subject; then delete it from LEDGER_DLQ
  dlq replay -all            replay every open dead letter there is now
  dlq discard SEQ -reason TEXT
                             close it: the command is not to run, and why
  dlq resolve SEQ -reason TEXT
                             close it: what it was for was done another way
                             (by hand, or under another key), and how

A closed dead letter stays in LEDGER_DLQ until its age drops it, shown with
who closed it (-actor, default cli:<user>), when and why; it is not replayed
and not counted open. Closing once is final: a second close is refused.

key and dlq read DATABASE_URL (-database-url), or, when neither is set, the
database of the onceledger dev running on the default data dir
(ONCELEDGER_DEV_DIR), where closures are recorded; dlq also reads NATS_URL
(-nats-url). key with cells (-cells,
ONCELEDGER_CELLS=1, or -cell NAME) reads the database_url the placement
stored in NATS gives -company's cell; see docs/cells.md.
Output: -format text (default) or json, for key, dlq list and dlq show.

Replaying is safe: a command whose key already has a result is answered from
the inbox (replayed) and not executed again. A message that still cannot
succeed is dead-lettered again.
`

// deadLetterStream is the dead-letter stream's name.
const deadLetterStream = ops.DeadLetterStream

// keyView and deadLetterView are what admin key and admin dlq print.
type (
	keyView        = ops.Key
	deadLetterView = ops.DeadLetter
)

func cmdAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, adminUsage)
		if len(args) == 0 {
			return &usageError{"a verb is required: key or dlq"}
		}
		return nil
	}
	switch args[0] {
	case "key":
		return adminKey(ctx, args[1:], stdout, stderr)
	case "dlq":
		if len(args) < 2 {
			return &usageError{"dlq needs list, show, replay, discard or resolve"}
		}
		return adminDLQ(ctx, args[1], args[2:], stdout, stderr)
	}
	return &usageError{fmt.Sprintf("unknown verb %q: key or dlq", args[0])}
}

// parseInterleaved parses flags given before, between or after positional
// arguments ("show 5 -nats-url …" as well as "show -nats-url … 5") and
// returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func adminKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	company := fs.String("company", "", "company ID (required)")
	var cf cellFlags
	cf.register(fs)
	key := fs.String("key", "", "idempotency key (required)")
	format := fs.String("format", "text", "text or json")
	fs.Usage = func() { fmt.Fprint(fs.Output(), adminUsage); fs.PrintDefaults() }
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if err := cf.resolve(ctx, dsn, *company); err != nil {
		return err
	}
	*dsn = orDevDatabase(*dsn, stderr)
	switch {
	case fs.NArg() > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case *company == "" || *key == "":
		return &usageError{"-company and -key are required"}
	case *format != "text" && *format != "json":
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	case *dsn == "":
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	}
	ref := ops.KeyRef{Company: *company, Key: *key}
	if err := ref.Validate(); err != nil {
		return &usageError{"-key: " + err.Error()}
	}
	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	v, err := ops.InspectKey(ctx, conn, ref)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	seq := "-"
	if v.StreamSequence != nil {
		seq = strconv.FormatInt(*v.StreamSequence, 10)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "company\t%s\n", v.Company)
	fmt.Fprintf(tw, "idempotency key\t%s\n", v.IdempotencyKey)
	fmt.Fprintf(tw, "command\t%s\n", v.Command)
	fmt.Fprintf(tw, "status\t%s\n", v.Status)
	fmt.Fprintf(tw, "fingerprint\t%s\n", v.Fingerprint)
	fmt.Fprintf(tw, "stream sequence\t%s\n", seq)
	fmt.Fprintf(tw, "created at\t%s\n", v.CreatedAt.UTC().Format(time.RFC3339Nano))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "result:")
	_, err = fmt.Fprintln(stdout, prettyJSON(v.Result))
	return err
}

// prettyJSON indents a JSON document, or returns b as text when it is not
// JSON (a dead letter's body may be anything).
func prettyJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}

func adminDLQ(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin dlq "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn natsFlags
	conn.register(fs)
	limit := fs.Int("limit", 50, "most dead letters listed (list)")
	all := fs.Bool("all", false, "replay every dead letter (replay)")
	format := fs.String("format", "text", "text or json (list, show)")
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL, where closures are recorded (env DATABASE_URL)")
	reason := fs.String("reason", "", "why the dead letter is closed (discard, resolve; required)")
	actor := fs.String("actor", "cli:"+currentUser(), "who closes it (discard, resolve)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), adminUsage); fs.PrintDefaults() }
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err.Error()}
	}
	if *format != "text" && *format != "json" {
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	}
	var seq uint64
	switch {
	case verb != "list" && verb != "show" && verb != "replay" && verb != "discard" && verb != "resolve":
		return &usageError{fmt.Sprintf("unknown dlq verb %q: list, show, replay, discard or resolve", verb)}
	case (verb == "discard" || verb == "resolve") && strings.TrimSpace(*reason) == "":
		return &usageError{verb + " needs -reason: why the dead letter is closed, kept with who closed it and when"}
	case verb != "discard" && verb != "resolve" && *reason != "":
		return &usageError{"-reason is for discard and resolve"}
	case verb == "list" && len(positional) > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", positional[0])}
	case verb == "list" && *limit < 1:
		return &usageError{"-limit must be at least 1"}
	case verb == "replay" && *all:
		if len(positional) > 0 {
			return &usageError{"replay takes a sequence or -all, not both"}
		}
	case verb == "show" || verb == "replay" || verb == "discard" || verb == "resolve":
		if len(positional) != 1 {
			return &usageError{verb + " needs the dead letter's stream sequence (see dlq list)"}
		}
		if seq, err = strconv.ParseUint(positional[0], 10, 64); err != nil || seq == 0 {
			return &usageError{fmt.Sprintf("%q is not a stream sequence", positional[0])}
		}
	}

	if errs := conn.validate(); len(errs) > 0 {
		return &usageError{errors.Join(errs...).Error()}
	}
	*dsn = orDevDatabase(*dsn, stderr)
	if *dsn == "" {
		return &usageError{"DATABASE_URL (or -database-url) is required: the dead letters' closures are recorded there"}
	}
	db, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer db.Close(context.WithoutCancel(ctx))
	nc, err := conn.connect("onceledger admin")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	dlq := ops.DeadLetters{JS: js, Stream: deadLetterStream, DB: db}

	switch {
	case verb == "list":
		page, err := dlq.List(ctx, *limit)
		if err != nil {
			return err
		}
		counts, err := dlq.Count(ctx)
		if err != nil {
			return err
		}
		return writeDeadLetters(stdout, page, counts, *format)
	case verb == "discard" || verb == "resolve":
		action := map[string]string{"discard": ops.Discarded, "resolve": ops.Resolved}[verb]
		d, err := dlq.Close(ctx, seq, action, *reason, *actor)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "dead letter %d (%s, key %s) %s\n", d.Sequence, d.OriginalSubject, d.IdempotencyKey, d.Closed)
		return err
	case verb == "show":
		d, err := dlq.Get(ctx, seq)
		if err != nil {
			return err
		}
		return showDeadLetter(d, *format, stdout)
	case *all:
		res, err := dlq.ReplayAll(ctx, func(r ops.Replayed, done int, total uint64) {
			// Each line as it happens: a long replay shows its progress.
			fmt.Fprintf(stdout, "[%d/%d] %s\n", done, total, r)
		})
		if err != nil {
			if res.StoppedAt != 0 {
				fmt.Fprintf(stdout, "replayed %d of %d dead letters, then stopped\n", len(res.Replayed), res.Total)
			}
			return err
		}
		closed := ""
		if len(res.Closed) > 0 {
			closed = fmt.Sprintf("; %d closed ones left alone", len(res.Closed))
		}
		_, err = fmt.Fprintf(stdout, "replayed %d dead letters%s\n", len(res.Replayed), closed)
		return err
	}
	r, err := dlq.Replay(ctx, seq)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, r)
	return err
}

func writeDeadLetters(stdout io.Writer, page ops.DeadLetterPage, counts ops.Counts, format string) error {
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(page.Letters)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSTATE\tDEAD-LETTERED\tORIGINAL SUBJECT\tKEY\tCODE\tDELIVERIES\tREASON")
	for _, d := range page.Letters {
		when := d.DeadLetteredAt
		if t, err := time.Parse(time.RFC3339Nano, when); err == nil {
			when = t.UTC().Format(time.RFC3339)
		}
		reason := strings.ReplaceAll(d.Reason, "\n", " ")
		if d.ReplayOf != "" {
			reason = "came back, replayed from " + d.ReplayOf + ": " + reason
		}
		state := "open"
		if d.Closed != nil {
			state = d.Closed.Action
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Sequence, state, when, d.OriginalSubject, truncate(d.IdempotencyKey, 40),
			d.Code, d.Deliveries, truncate(reason, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "%d of %d dead letters in %s, %d of them open\n", len(page.Letters), page.Total, deadLetterStream, counts.Open)
	return err
}

func showDeadLetter(v deadLetterView, format string, stdout io.Writer) error {
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(stdout, "dead letter %d, stored %s on %s\n", v.Sequence, v.StoredAt.UTC().Format(time.RFC3339Nano), v.Subject)
	if v.Closed != nil {
		fmt.Fprintf(stdout, "closed: %s\n", v.Closed)
	} else {
		fmt.Fprintln(stdout, "open")
	}
	fmt.Fprintln(stdout)
	names := make([]string, 0, len(v.Headers))
	for k := range v.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, val := range v.Headers[k] {
			fmt.Fprintf(stdout, "%s: %s\n", k, val)
		}
	}
	_, err := fmt.Fprintf(stdout, "\n%s\n", prettyJSON([]byte(v.Body)))
	return err
}

// currentUser names who runs the command, for the record of what it did.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return name
	}
	return "unknown"
}
