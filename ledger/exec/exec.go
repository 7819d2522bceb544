package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
)

// Item is one command to execute.
type Item struct {
	Company string
	Command ledger.Command
	// Key is the command's idempotency key, kept with documents whose
	// repeats name the first record's key; empty where there is none
	// (Run).
	Key string
}

// Result is what executing one Item gave: an outcome, or a business error
// (Err) that leaves no effects.
type Result struct {
	Outcome ledger.Outcome
	Err     *ledger.Error
}

// Kind executes the commands it names, many at a time.
type Kind interface {
	// Commands names the commands of this kind: ledger.Command names.
	Commands() []string
	// Prepare queues on reads the statements that read what items need and
	// returns the plan that reads their results and executes the items.
	Prepare(items []Item, reads *pgx.Batch) Plan
}

// Plan is a batch of commands between its reads and its writes.
type Plan interface {
	// Read reads the results of the statements Prepare queued, in the order
	// queued.
	Read(br pgx.BatchResults) error
	// Execute executes the items at the indexes which, in that order, queues
	// every write on writes, and gives one result per index. A plan
	// executes once.
	Execute(which []int, writes *pgx.Batch) ([]Result, error)
}

// OnePerCompany is implemented by kinds whose writes change what later
// commands of the same company write beyond the kind's own tables (webhook
// endpoints decide which deliveries an event fans out to): the caller gives
// such a kind at most one command of a company at a time, so every event
// sees the endpoints as they were when its command ran.
type OnePerCompany interface {
	OnePerCompany()
}

// Kinds maps command names to the kind that executes them.
type Kinds struct {
	kinds []Kind
	by    map[string]int // index in kinds
}

// NewKinds returns the set of kinds; a command named by two kinds, or a
// name that is no command, is refused.
func NewKinds(kinds ...Kind) (*Kinds, error) {
	k := &Kinds{kinds: kinds, by: map[string]int{}}
	for i, kind := range kinds {
		for _, name := range kind.Commands() {
			if _, dup := k.by[name]; dup {
				return nil, fmt.Errorf("exec: command %s has two kinds", name)
			}
			if !ledger.KnownCommand(name) {
				return nil, fmt.Errorf("exec: %s is not a command", name)
			}
			k.by[name] = i
		}
	}
	return k, nil
}

// Complete reports the commands of ledger.CommandNames that no kind of
// the set executes.
func (k *Kinds) Complete() error {
	var missing []string
	for _, name := range ledger.CommandNames() {
		if _, ok := k.by[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("exec: no kind executes %v", missing)
	}
	return nil
}

// Of returns the kind of the command named name.
func (k *Kinds) Of(name string) (Kind, bool) {
	kind, _, ok := k.Lookup(name)
	return kind, ok
}

// Lookup returns the kind of the command named name and its index in the
// set: commands of one kind have the same index.
func (k *Kinds) Lookup(name string) (kind Kind, index int, ok bool) {
	i, ok := k.by[name]
	if !ok {
		return nil, -1, false
	}
	return k.kinds[i], i, true
}

// Commands returns the names of every command of the set, sorted.
func (k *Kinds) Commands() []string {
	names := make([]string, 0, len(k.by))
	for n := range k.by {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Run executes one command of company in tx, a batch of one: the kind's
// reads, its decision and its writes, two round trips. It writes the
// command's effects only, neither its events nor its idempotency key (the
// consumer writes those with them); a business error is returned as the
// *ledger.Error and leaves nothing written, so tx stays usable. For tests
// and tools of a kind.
func Run(ctx context.Context, tx pgx.Tx, kinds *Kinds, company string, cmd ledger.Command) (ledger.Outcome, error) {
	kind, ok := kinds.Of(cmd.CommandName())
	if !ok {
		return ledger.Outcome{}, fmt.Errorf("exec: no kind executes %s", cmd.CommandName())
	}
	reads := &pgx.Batch{}
	plan := kind.Prepare([]Item{{Company: company, Command: cmd}}, reads)
	br := tx.SendBatch(ctx, reads)
	err := plan.Read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ledger.Outcome{}, err
	}
	writes := &pgx.Batch{}
	results, err := plan.Execute([]int{0}, writes)
	if err != nil {
		return ledger.Outcome{}, err
	}
	if len(results) != 1 {
		return ledger.Outcome{}, errors.New("exec: a plan of one item gave no result")
	}
	if results[0].Err != nil {
		return ledger.Outcome{}, results[0].Err
	}
	if err := tx.SendBatch(ctx, writes).Close(); err != nil {
		return ledger.Outcome{}, err
	}
	return results[0].Outcome, nil
}
