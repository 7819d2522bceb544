package cells

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// MaxPartitions bounds the partition count: a consumer filters one subject
// per partition it serves, and a placement names each.
const MaxPartitions = 1024

// Partition returns the partition of company among n, as the command
// stream's subject transform computes it: FNV-1a (32 bits) of the company
// token, modulo n. It returns 0 for n < 1, as the server does for n = 0.
func Partition(company string, n int) int {
	if n < 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(company))
	return int(h.Sum32() % uint32(n))
}

// Transform is the command stream's subject transform for n partitions:
// ledger.cmd.<company>.<command…> is stored as
// ledger.cmd.P.<partition>.<company>.<command…>.
func Transform(n int) *jetstream.SubjectTransformConfig {
	return &jetstream.SubjectTransformConfig{
		Source:      protocol.CommandSubjectPrefix + "*.>",
		Destination: protocol.CommandSubjectPrefix + protocol.PartitionMarker + ".{{partition(" + strconv.Itoa(n) + ",1)}}.{{wildcard(1)}}.>",
	}
}

// FilterSubjects are the stored subjects of the partitions parts, a
// cell's consumer's filter.
func FilterSubjects(parts []int) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = protocol.PartitionedSubjectPrefix(p) + ">"
	}
	return out
}

// Placement says which cell serves which partitions.
type Placement struct {
	// Partitions is the partition count, fixed for the life of an
	// installation: changing it moves companies.
	Partitions int `json:"partitions"`
	// Cells are the cells, each with the partitions it serves.
	Cells []Cell `json:"cells"`
	// Moving, while a partition moves between cells (onceledger cells
	// move), is that partition, which then no cell serves.
	Moving *Moving `json:"moving,omitempty"`
}

// Moving is a partition on its way from one cell to another: the old cell
// has stopped consuming it, the new one does not yet, and its commands
// published meanwhile wait in the stream for the move's handoff consumer,
// which reads the partition from StartSequence on.
type Moving struct {
	Partition     int    `json:"partition"`
	From          string `json:"from"`
	To            string `json:"to"`
	StartSequence uint64 `json:"start_sequence"`
}

// Cell is one database and the workers that serve its partitions.
type Cell struct {
	// Name names the cell in its consumer's durable name, its result
	// lookup's queue group and its dead letters' IDs: 1-32 of a-z, 0-9,
	// '-', '_'.
	Name string `json:"name"`
	// Partitions are the partitions it serves.
	Partitions []int `json:"partitions"`
	// DatabaseURL is the cell's database, for the tools that find a
	// company's database by its cell. It may leave out the password, which
	// then comes from the environment (PGPASSWORD, ~/.pgpass).
	DatabaseURL string `json:"database_url,omitempty"`
}

// ErrNoCell is returned by Placement.Cell for a name the placement does
// not have.
var ErrNoCell = errors.New("cells: no such cell in the placement")

// Validate checks that the placement can run: a partition count within
// bounds, valid and distinct cell names, and every partition served by
// exactly one cell. Every problem is reported, each naming the cells and
// partitions concerned.
func (p Placement) Validate() error {
	if p.Partitions < 1 || p.Partitions > MaxPartitions {
		return fmt.Errorf("cells: the partition count must be 1 to %d, got %d", MaxPartitions, p.Partitions)
	}
	if len(p.Cells) == 0 {
		return errors.New("cells: the placement has no cells")
	}
	var errs []error
	owner := make([]string, p.Partitions)
	names := map[string]bool{}
	for _, c := range p.Cells {
		if !validName(c.Name) {
			errs = append(errs, fmt.Errorf("cell name %q: 1-32 of a-z, 0-9, '-', '_'", c.Name))
		}
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("cell %q appears twice", c.Name))
		}
		names[c.Name] = true
		for _, part := range c.Partitions {
			switch {
			case part < 0 || part >= p.Partitions:
				errs = append(errs, fmt.Errorf("cell %q claims partition %d, outside 0-%d", c.Name, part, p.Partitions-1))
			case owner[part] == c.Name:
				errs = append(errs, fmt.Errorf("cell %q claims partition %d twice", c.Name, part))
			case owner[part] != "":
				errs = append(errs, fmt.Errorf("partition %d is claimed by two cells, %q and %q", part, owner[part], c.Name))
			default:
				owner[part] = c.Name
			}
		}
	}
	if m := p.Moving; m != nil {
		switch {
		case m.Partition < 0 || m.Partition >= p.Partitions:
			errs = append(errs, fmt.Errorf("moving partition %d is outside 0-%d", m.Partition, p.Partitions-1))
		case owner[m.Partition] != "":
			errs = append(errs, fmt.Errorf("partition %d is moving, and cell %q claims it", m.Partition, owner[m.Partition]))
		default:
			owner[m.Partition] = "(moving)"
		}
		if m.From == m.To || !names[m.From] || !names[m.To] {
			errs = append(errs, fmt.Errorf("partition %d moves from cell %q to cell %q: two cells of the placement", m.Partition, m.From, m.To))
		}
		if m.StartSequence < 1 {
			errs = append(errs, fmt.Errorf("partition %d moves with no start sequence", m.Partition))
		}
	}
	var unserved []string
	for part, name := range owner {
		if name == "" {
			unserved = append(unserved, strconv.Itoa(part))
		}
	}
	if len(unserved) > 0 {
		errs = append(errs, fmt.Errorf("no cell serves partition(s) %s", strings.Join(unserved, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cells: invalid placement: %w", err)
	}
	return nil
}

// Cell returns the cell named name.
func (p Placement) Cell(name string) (Cell, error) {
	for _, c := range p.Cells {
		if c.Name == name {
			return c, nil
		}
	}
	return Cell{}, fmt.Errorf("%w: %q (it has %s)", ErrNoCell, name, strings.Join(p.names(), ", "))
}

// CellOf returns the cell that serves company. The placement must be
// valid. A company of a moving partition has none until the move ends.
func (p Placement) CellOf(company string) (Cell, bool) {
	part := Partition(company, p.Partitions)
	for _, c := range p.Cells {
		if slices.Contains(c.Partitions, part) {
			return c, true
		}
	}
	return Cell{}, false
}

// Durable is the name of the durable consumer of the cell named name,
// and of its result lookup's queue group: each cell has its own, so that
// every cell's workers get their share of the commands and one copy of
// every lookup.
func Durable(name string) string { return "onceledger-" + name }

// HandoffDurable is the name of the consumer that hands a moving
// partition's commands to its new cell. A cell's name starts with a
// letter or digit, so no cell's durable is named so.
func HandoffDurable(partition int) string { return "onceledger_move-" + strconv.Itoa(partition) }

// Moves lists the partitions whose cell differs between p and next, as
// "partition N: cell X -> cell Y" (a missing cell is "none").
func (p Placement) Moves(next Placement) []string {
	owners := func(pl Placement) map[int]string {
		m := map[int]string{}
		for _, c := range pl.Cells {
			for _, part := range c.Partitions {
				m[part] = c.Name
			}
		}
		return m
	}
	was, will := owners(p), owners(next)
	var out []string
	for part := range max(p.Partitions, next.Partitions) {
		from, to := was[part], will[part]
		if from == to {
			continue
		}
		if from == "" {
			from = "none"
		}
		if to == "" {
			to = "none"
		}
		out = append(out, fmt.Sprintf("partition %d: cell %s -> cell %s", part, from, to))
	}
	return out
}

// Member is one cell of a placement: what a worker of that cell needs.
type Member struct {
	Cell
	// Of is the placement's partition count.
	Of int
}

// Member returns the member named name of a valid placement.
func (p Placement) Member(name string) (Member, error) {
	if err := p.Validate(); err != nil {
		return Member{}, err
	}
	c, err := p.Cell(name)
	if err != nil {
		return Member{}, err
	}
	return Member{Cell: c, Of: p.Partitions}, nil
}

// Serves reports whether company's partition is one of m's.
func (m Member) Serves(company string) bool {
	return slices.Contains(m.Partitions, Partition(company, m.Of))
}

func (p Placement) names() []string {
	out := make([]string, len(p.Cells))
	for i, c := range p.Cells {
		out[i] = c.Name
	}
	return out
}

func validName(s string) bool {
	return len(s) <= 32 && ledger.ValidCompanyID(s)
}
