package kinds

import (
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/onceledger/onceledger/ledger/exec"
	"github.com/onceledger/onceledger/ledger/postgres"
	"github.com/onceledger/onceledger/webhooks"
)

// All returns the kinds of every command onceledger executes, the webhook
// endpoints' under rules, the ledger's under opts.
func All(rules webhooks.Rules, opts ...postgres.Option) (*exec.Kinds, error) {
	k, err := exec.NewKinds(append(postgres.Kinds(opts...), webhooks.Kinds(rules)...)...)
	if err != nil {
		return nil, err
	}
	if err := k.Complete(); err != nil {
		return nil, err
	}
	return k, nil
}

// Hook is what WithHook adds to a kind's plans, for tests that need a kind
// to fail, block or report at one step. Every field is optional.
type Hook struct {
	// Prepare runs after the kind's Prepare and may queue more reads; Read
	// then reads their results after the kind's own.
	Prepare func(items []exec.Item, reads *pgx.Batch)
	Read    func(br pgx.BatchResults) error
	// Execute runs after the kind's Execute, with the items it executed,
	// and may queue more writes; an error fails the plan, as a fault of
	// the database would, and a panic is the plan's.
	Execute func(items []exec.Item, writes *pgx.Batch) error
}

// WithHook returns All(rules) with hook added to the kind that executes
// command.
func WithHook(rules webhooks.Rules, command string, hook Hook, opts ...postgres.Option) (*exec.Kinds, error) {
	var list []exec.Kind
	for _, k := range append(postgres.Kinds(opts...), webhooks.Kinds(rules)...) {
		if slices.Contains(k.Commands(), command) {
			if _, ok := k.(exec.OnePerCompany); ok {
				k = hookedAlone{hooked{k, hook}}
			} else {
				k = hooked{k, hook}
			}
		}
		list = append(list, k)
	}
	return exec.NewKinds(list...)
}

type hooked struct {
	exec.Kind
	hook Hook
}

type hookedAlone struct{ hooked }

func (hookedAlone) OnePerCompany() {}

func (k hooked) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := hookedPlan{k.Kind.Prepare(items, reads), items, k.hook}
	if k.hook.Prepare != nil {
		k.hook.Prepare(items, reads)
	}
	return p
}

type hookedPlan struct {
	exec.Plan
	items []exec.Item
	hook  Hook
}

func (p hookedPlan) Read(br pgx.BatchResults) error {
	if err := p.Plan.Read(br); err != nil {
		return err
	}
	if p.hook.Read != nil {
		return p.hook.Read(br)
	}
	return nil
}

func (p hookedPlan) Execute(which []int, writes *pgx.Batch) ([]exec.Result, error) {
	results, err := p.Plan.Execute(which, writes)
	if err != nil || p.hook.Execute == nil {
		return results, err
	}
	items := make([]exec.Item, len(which))
	for i, at := range which {
		items[i] = p.items[at]
	}
	if err := p.hook.Execute(items, writes); err != nil {
		return nil, err
	}
	return results, nil
}
