package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/protocol"
)

const adminUsage = `Usage: onceledger admin <verb> [flags]

Inspects idempotency keys and dead letters, and replays dead letters.

Verbs:
  key -company ID -key KEY   the inbox row of a key: command, status, fingerprint,
                             stream sequence, when, and the stored result
  dlq list [-limit 50]       dead letters in LEDGER_DLQ, oldest first
  dlq show SEQ               one dead letter: its headers and body
  dlq replay SEQ             publish it again, with its original headers, to its
                             original subject; then delete it from LEDGER_DLQ
  dlq replay -all            replay every dead letter there is now

key reads DATABASE_URL (-database-url), or, when neither is set, the
database of the onceledger dev running on the default data dir
(ONCELEDGER_DEV_DIR); dlq reads NATS_URL (-nats-url).
Output: -format text (default) or json, for key, dlq list and dlq show.

Replaying is safe: a command whose key already has a result is answered from
the inbox (replayed) and not executed again. A message that still cannot
succeed is dead-lettered again.
`

// deadLetterStream is the dead-letter stream's name.
const deadLetterStream = consumer.DefaultDeadLetterStream

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
			return &usageError{"dlq needs list, show or replay"}
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

// keyView is an inbox row as admin key shows it.
type keyView struct {
	Company        string          `json:"company"`
	IdempotencyKey string          `json:"idempotency_key"`
	Command        string          `json:"command"`
	Status         string          `json:"status"`
	Fingerprint    string          `json:"fingerprint"`
	StreamSequence *int64          `json:"stream_sequence"`
	CreatedAt      time.Time       `json:"created_at"`
	Result         json.RawMessage `json:"result"`
}

func adminKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	company := fs.String("company", "", "company ID (required)")
	key := fs.String("key", "", "idempotency key (required)")
	format := fs.String("format", "text", "text or json")
	fs.Usage = func() { fmt.Fprint(fs.Output(), adminUsage); fs.PrintDefaults() }
	if help, err := parseFlags(fs, args); help || err != nil {
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
	// The key as producers write it: "order-1041" names order-1041.
	named, kerr := protocol.ParseKey(*key)
	if kerr != nil {
		return &usageError{"-key: " + kerr.Message}
	}
	*key = named
	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	row, err := inbox.Get(ctx, conn, inbox.Key{Company: *company, Key: *key})
	if errors.Is(err, inbox.ErrNotFound) {
		return fmt.Errorf("no result is stored for key %q of company %q: the command never committed, is still in flight, or the key was purged after the inbox retention", *key, *company)
	}
	if err != nil {
		return fmt.Errorf("read the inbox: %w", err)
	}
	v := keyView{Company: row.Company, IdempotencyKey: row.Key, Command: row.Command, Status: row.Status,
		Fingerprint: hex.EncodeToString(row.Fingerprint), CreatedAt: row.CreatedAt, Result: json.RawMessage(row.Result)}
	if row.StreamSequence != 0 {
		v.StreamSequence = &row.StreamSequence
	}
	result := string(row.Result)
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
	_, err = fmt.Fprintln(stdout, prettyJSON([]byte(result)))
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

// deadLetterView is a dead letter as admin dlq shows it.
type deadLetterView struct {
	Sequence         uint64              `json:"sequence"`
	StoredAt         time.Time           `json:"stored_at"`
	Subject          string              `json:"subject"`
	OriginalSubject  string              `json:"original_subject"`
	OriginalSequence string              `json:"original_sequence,omitempty"`
	Code             string              `json:"code"`
	Reason           string              `json:"reason"`
	Deliveries       string              `json:"deliveries,omitempty"`
	DeadLetteredAt   string              `json:"dead_lettered_at,omitempty"`
	IdempotencyKey   string              `json:"idempotency_key,omitempty"`
	Headers          map[string][]string `json:"headers,omitempty"`
	Body             string              `json:"body,omitempty"`
}

func viewDeadLetter(m *jetstream.RawStreamMsg, full bool) deadLetterView {
	h := m.Header
	v := deadLetterView{
		Sequence: m.Sequence, StoredAt: m.Time, Subject: m.Subject,
		OriginalSubject:  h.Get(protocol.HeaderOriginalSubject),
		OriginalSequence: h.Get(protocol.HeaderOriginalSequence),
		Code:             h.Get(protocol.HeaderDeadLetterCode),
		Reason:           h.Get(protocol.HeaderDeadLetterReason),
		Deliveries:       h.Get(protocol.HeaderDeliveries),
		DeadLetteredAt:   h.Get(protocol.HeaderDeadLetteredAt),
		IdempotencyKey:   h.Get(protocol.HeaderIdempotencyKey),
	}
	if full {
		v.Headers, v.Body = h, string(m.Data)
	}
	return v
}

func adminDLQ(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin dlq "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn natsFlags
	conn.register(fs)
	limit := fs.Int("limit", 50, "most dead letters listed (list)")
	all := fs.Bool("all", false, "replay every dead letter (replay)")
	format := fs.String("format", "text", "text or json (list, show)")
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
	case verb != "list" && verb != "show" && verb != "replay":
		return &usageError{fmt.Sprintf("unknown dlq verb %q: list, show or replay", verb)}
	case verb == "list" && len(positional) > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", positional[0])}
	case verb == "list" && *limit < 1:
		return &usageError{"-limit must be at least 1"}
	case verb == "replay" && *all:
		if len(positional) > 0 {
			return &usageError{"replay takes a sequence or -all, not both"}
		}
	case verb == "show" || verb == "replay":
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
	nc, err := conn.connect("onceledger admin")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	stream, err := js.Stream(ctx, deadLetterStream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", deadLetterStream, err)
	}

	switch {
	case verb == "list":
		return listDeadLetters(ctx, stream, *limit, *format, stdout)
	case verb == "show":
		m, err := getDeadLetter(ctx, stream, seq)
		if err != nil {
			return err
		}
		return showDeadLetter(viewDeadLetter(m, true), *format, stdout)
	case *all:
		return replayAll(ctx, js, stream, stdout)
	}
	m, err := getDeadLetter(ctx, stream, seq)
	if err != nil {
		return err
	}
	line, err := replayDeadLetter(ctx, js, stream, m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, line)
	return err
}

func getDeadLetter(ctx context.Context, stream jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	m, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("no dead letter %d in %s (replayed, deleted, or never there)", seq, deadLetterStream)
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	return m, nil
}

// nextDeadLetter returns the first dead letter at or after seq, skipping
// the holes replays leave, or nil when there is none.
func nextDeadLetter(ctx context.Context, stream jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(protocol.DeadLetterPrefix+">"))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letters from %d: %w", seq, err)
	}
	return m, nil
}

func listDeadLetters(ctx context.Context, stream jetstream.Stream, limit int, format string, stdout io.Writer) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", deadLetterStream, err)
	}
	list := []deadLetterView{}
	for seq := info.State.FirstSeq; len(list) < limit && info.State.Msgs > 0 && seq <= info.State.LastSeq; {
		m, err := nextDeadLetter(ctx, stream, seq)
		if err != nil {
			return err
		}
		if m == nil {
			break
		}
		list = append(list, viewDeadLetter(m, false))
		seq = m.Sequence + 1
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tDEAD-LETTERED\tORIGINAL SUBJECT\tKEY\tCODE\tDELIVERIES\tREASON")
	for _, d := range list {
		when := d.DeadLetteredAt
		if t, err := time.Parse(time.RFC3339Nano, when); err == nil {
			when = t.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Sequence, when, d.OriginalSubject, truncate(d.IdempotencyKey, 40),
			d.Code, d.Deliveries, truncate(strings.ReplaceAll(d.Reason, "\n", " "), 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%d of %d dead letters in %s\n", len(list), info.State.Msgs, deadLetterStream)
	return err
}

func showDeadLetter(v deadLetterView, format string, stdout io.Writer) error {
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(stdout, "dead letter %d, stored %s on %s\n\n", v.Sequence, v.StoredAt.UTC().Format(time.RFC3339Nano), v.Subject)
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

// deadLetterHeaders are the headers the dead-lettering adds; a replay
// leaves them off so the command arrives as it was first sent.
var deadLetterHeaders = []string{
	protocol.HeaderDeadLetterCode, protocol.HeaderDeadLetterReason, protocol.HeaderOriginalSubject,
	protocol.HeaderOriginalSequence, protocol.HeaderDeliveries, protocol.HeaderDeadLetteredAt,
}

// replayDeadLetter publishes m's original message to its original subject
// and, once JetStream has stored it, deletes m from the dead-letter stream.
// It returns a line saying what it did. If the delete fails, the command is
// replayed and the dead letter stays: replaying it again is harmless.
func replayDeadLetter(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, m *jetstream.RawStreamMsg) (string, error) {
	subject := m.Header.Get(protocol.HeaderOriginalSubject)
	if !strings.HasPrefix(subject, protocol.CommandSubjectPrefix) {
		// Only commands go back, and only where onceledger says they came
		// from: a replay must not become a way to publish anywhere.
		return "", fmt.Errorf("dead letter %d has no %s header naming a %s… subject (it has %q); not replayed",
			m.Sequence, protocol.HeaderOriginalSubject, protocol.CommandSubjectPrefix, subject)
	}
	msg := nats.NewMsg(subject)
	msg.Data = m.Data
	for k, v := range m.Header {
		// JetStream's own headers (Nats-Msg-Id, Nats-Expected-…) would
		// change how the replay is stored; a fresh message ID is set below.
		if strings.HasPrefix(strings.ToLower(k), "nats-") ||
			slices.ContainsFunc(deadLetterHeaders, func(h string) bool { return strings.EqualFold(h, k) }) {
			continue
		}
		msg.Header[k] = append([]string(nil), v...)
	}
	// Unique per attempt, so JetStream's duplicate window never swallows a
	// deliberate second replay; the inbox dedupes by key instead.
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("replay-%d-%d", m.Sequence, time.Now().UnixNano()))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ack, err := js.PublishMsg(pctx, msg)
	if err != nil {
		return "", fmt.Errorf("replay dead letter %d to %s: %w (it stays in %s)", m.Sequence, subject, err, deadLetterStream)
	}
	if err := stream.DeleteMsg(ctx, m.Sequence); err != nil {
		return "", fmt.Errorf("dead letter %d was replayed to %s (%s sequence %d) but could not be deleted from %s: %w; replaying it again is harmless",
			m.Sequence, subject, ack.Stream, ack.Sequence, deadLetterStream, err)
	}
	return fmt.Sprintf("replayed dead letter %d to %s (%s sequence %d)", m.Sequence, subject, ack.Stream, ack.Sequence), nil
}

// replayAll replays the dead letters present when it starts, oldest first,
// and stops at the first failure. Messages dead-lettered again while it
// runs (a replayed command that still cannot succeed) come after the last
// sequence it saw and are left for the operator.
func replayAll(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, stdout io.Writer) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", deadLetterStream, err)
	}
	total, last := info.State.Msgs, info.State.LastSeq
	var done uint64
	for seq := info.State.FirstSeq; total > 0 && seq <= last; {
		m, err := nextDeadLetter(ctx, stream, seq)
		if err != nil {
			return err
		}
		if m == nil || m.Sequence > last {
			break
		}
		line, err := replayDeadLetter(ctx, js, stream, m)
		if err != nil {
			fmt.Fprintf(stdout, "replayed %d of %d dead letters, then stopped\n", done, total)
			return err
		}
		done++
		fmt.Fprintf(stdout, "[%d/%d] %s\n", done, total, line)
		seq = m.Sequence + 1
	}
	_, err = fmt.Fprintf(stdout, "replayed %d dead letters\n", done)
	return err
}
