// Package cellmove moves a partition of companies from one cell to another
// (onceledger cells move): it hands the partition's commands over in the
// command stream, fences the old cell's database, copies the companies'
// rows, verifies the copy, and gives the partition to the new cell. See
// docs/cells.md, "Moving a partition".
package cellmove

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/cells"
	"github.com/onceledger/onceledger/ledger/exec"
)

// Config is one move.
type Config struct {
	// NATS carries the placement, the command stream and the handoff.
	NATS *nats.Conn
	// Partition moves to the cell named To.
	Partition int
	To        string
	// Open connects to a cell's database; the caller closes nothing: Move
	// closes what Open returned.
	Open func(ctx context.Context, c cells.Cell) (*pgxpool.Pool, error)
	// Kinds execute the partition's commands that wait in the stream
	// while it moves, on the new cell's database: those of the new cell's
	// workers.
	Kinds *exec.Kinds
	// Consumer is the base of the handoff's consumer configuration (its
	// subscriber and batch settings); the durable, the result queue and
	// the cell are the move's.
	Consumer consumer.Config
	// Stream is the command stream. Defaults to LEDGER_CMD.
	Stream string
	// CatchUp bounds the wait for the handoff to run what waited in the
	// stream, each time it is waited for. Defaults to 5 minutes.
	CatchUp time.Duration
	// Out receives a line per step. Defaults to io.Discard.
	Out io.Writer
	// Logger logs the handoff worker. Defaults to slog.Default().
	Logger *slog.Logger
}

// Report is what a move did.
type Report struct {
	Partition  int
	From, To   string
	Companies  []string
	Tables     []TableCopy
	Resumed    bool
	HandedOver uint64 // the handoff's first stream sequence
}

// TableCopy is one table's copy: its rows for the companies and the
// checksum both databases computed over them.
type TableCopy struct {
	Table    string
	Rows     int64
	Checksum string
}

func (c *Config) defaults() {
	if c.Stream == "" {
		c.Stream = consumer.DefaultStream
	}
	if c.CatchUp == 0 {
		c.CatchUp = 5 * time.Minute
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Move moves cfg.Partition to cfg.To. It can be run again after it
// failed or was stopped part way: a move the placement records as under
// way goes on from where the databases and the stream say it is.
func Move(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	say := func(format string, args ...any) { fmt.Fprintf(cfg.Out, format+"\n", args...) }
	js, err := jetstream.New(cfg.NATS)
	if err != nil {
		return nil, err
	}
	p, rev, err := cells.Load(ctx, js)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("the stored placement is invalid: %w", err)
	}
	part := cfg.Partition
	if part < 0 || part >= p.Partitions {
		return nil, fmt.Errorf("partition %d is outside 0-%d", part, p.Partitions-1)
	}
	to, err := p.Cell(cfg.To)
	if err != nil {
		return nil, err
	}
	r := &Report{Partition: part, To: to.Name}
	var from cells.Cell
	switch m := p.Moving; {
	case m != nil && (m.Partition != part || m.To != to.Name):
		return nil, fmt.Errorf("partition %d is moving from cell %s to cell %s: finish that move first (onceledger cells move -partition %d -to %s)", m.Partition, m.From, m.To, m.Partition, m.To)
	case m != nil:
		r.Resumed = true
		if from, err = p.Cell(m.From); err != nil {
			return nil, err
		}
		r.HandedOver = m.StartSequence
		say("resuming the move of partition %d from cell %s to cell %s (handoff from stream sequence %d)", part, from.Name, to.Name, m.StartSequence)
	default:
		owner, ok := ownerOf(p, part)
		if !ok {
			return nil, fmt.Errorf("no cell serves partition %d", part)
		}
		if owner.Name == to.Name {
			// A move stopped between its flip and the end of its handoff
			// leaves the handoff consumer; the new cell's consumer has
			// the partition, so it is only deleted.
			err := js.DeleteConsumer(ctx, cfg.Stream, cells.HandoffDurable(part))
			switch {
			case err == nil:
				say("cell %s serves partition %d; deleted the handoff consumer %s its move left", to.Name, part, cells.HandoffDurable(part))
				return &Report{Partition: part, To: to.Name, Resumed: true}, nil
			case !errors.Is(err, jetstream.ErrConsumerNotFound):
				return nil, fmt.Errorf("delete the handoff consumer %s: %w", cells.HandoffDurable(part), err)
			}
			return nil, fmt.Errorf("cell %s serves partition %d already", to.Name, part)
		}
		from = owner
	}
	r.From = from.Name
	if from.DatabaseURL == "" || to.DatabaseURL == "" {
		return nil, fmt.Errorf("the placement must give cells %s and %s a database_url (onceledger cells set)", from.Name, to.Name)
	}
	fromDB, err := cfg.Open(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("cell %s's database: %w", from.Name, err)
	}
	defer fromDB.Close()
	toDB, err := cfg.Open(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("cell %s's database: %w", to.Name, err)
	}
	defer toDB.Close()
	if err := sameSchema(ctx, fromDB, toDB); err != nil {
		return nil, err
	}
	if !r.Resumed {
		if err := refuseOccupied(ctx, fromDB, toDB, part, p.Partitions, to.Name); err != nil {
			return nil, err
		}
		if rev, err = handOver(ctx, js, cfg.Stream, p, rev, from, to, part, r, say); err != nil {
			return nil, err
		}
	}

	// From here on the old cell consumes nothing of the partition; the
	// fence makes sure nothing it still had in hand commits.
	if _, err := fromDB.Exec(ctx, `SELECT cell_fence($1, $2, $3)`, part, p.Partitions, to.Name); err != nil {
		return nil, fmt.Errorf("fence partition %d in cell %s's database: %w", part, from.Name, err)
	}
	say("fenced partition %d in cell %s's database: it runs no more of its commands", part, from.Name)

	companies, err := companiesOf(ctx, fromDB, part, p.Partitions)
	if err != nil {
		return nil, err
	}
	r.Companies = companies
	copied, err := holds(ctx, toDB, companies)
	if err != nil {
		return nil, err
	}
	switch {
	case len(copied) == 0:
		tables, err := copyCompanies(ctx, fromDB, toDB, companies, part, p.Partitions)
		if err != nil {
			return nil, err
		}
		r.Tables = tables
		var rows int64
		for _, t := range tables {
			rows += t.Rows
		}
		say("copied %d companies, %d rows in %d tables, to cell %s's database; the checksums and the audit agree on both sides", len(companies), rows, len(tables), to.Name)
	case len(copied) == len(companies):
		say("cell %s's database holds the partition's %d companies already (copied by the run this one resumes)", to.Name, len(companies))
	default:
		return nil, fmt.Errorf("cell %s's database holds %d of the partition's %d companies (%v): a copy is all or nothing, so these were not copied by a move; remove them or move them back first", to.Name, len(copied), len(companies), copied)
	}

	return r, finish(ctx, cfg, js, toDB, from, to, part, say)
}

// finish runs the commands that waited while the partition moved, gives
// it to its new cell and ends the handoff.
func finish(ctx context.Context, cfg Config, js jetstream.JetStream, toDB *pgxpool.Pool, from, to cells.Cell, part int, say func(string, ...any)) error {
	p, rev, err := cells.Load(ctx, js)
	if err != nil {
		return err
	}
	if p.Moving == nil || p.Moving.Partition != part {
		return fmt.Errorf("the placement (revision %d) no longer records the move of partition %d: it was changed meanwhile", rev, part)
	}
	hw, err := startHandoff(ctx, cfg, toDB, to, part, p.Partitions)
	if err != nil {
		return err
	}
	defer hw.stop()
	handoff, err := js.Consumer(ctx, cfg.Stream, cells.HandoffDurable(part))
	if err != nil {
		return fmt.Errorf("handoff consumer: %w", err)
	}
	if err := caughtUp(ctx, handoff, hw, cfg.CatchUp); err != nil {
		return err
	}
	say("ran the partition's commands that waited in the stream, on cell %s's database", to.Name)

	// The new cell's consumer takes the partition on from where it is in
	// the stream; what it has passed of the partition is the handoff's,
	// which runs until it has nothing left.
	toNow, err := p.Cell(to.Name)
	if err != nil {
		return err
	}
	if err := serve(ctx, js, cfg.Stream, toNow, append(slices.Clone(toNow.Partitions), part), handoff.CachedInfo().Config); err != nil {
		return err
	}
	if err := caughtUp(ctx, handoff, hw, cfg.CatchUp); err != nil {
		return err
	}
	next := p
	next.Cells = slices.Clone(p.Cells)
	for i, c := range next.Cells {
		if c.Name == to.Name {
			c.Partitions = append(slices.Clone(c.Partitions), part)
			slices.Sort(c.Partitions)
			next.Cells[i] = c
		}
	}
	next.Moving = nil
	newRev, err := cells.Update(ctx, js, next, rev)
	if err != nil {
		return fmt.Errorf("give partition %d to cell %s: %w", part, to.Name, err)
	}
	say("placement revision %d: cell %s serves partition %d", newRev, to.Name, part)
	if err := hw.stop(); err != nil {
		return fmt.Errorf("handoff worker: %w", err)
	}
	if err := js.DeleteConsumer(ctx, cfg.Stream, cells.HandoffDurable(part)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete the handoff consumer: %w", err)
	}
	say("partition %d moved from cell %s to cell %s", part, from.Name, to.Name)
	return nil
}

func ownerOf(p cells.Placement, part int) (cells.Cell, bool) {
	for _, c := range p.Cells {
		if slices.Contains(c.Partitions, part) {
			return c, true
		}
	}
	return cells.Cell{}, false
}
