package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/cells"
)

// cellFlags let a tool that reads or writes a company's database (books,
// audit, admin key, tokens) find that database the way the commands do:
// in the placement stored in NATS (docs/cells.md), instead of in
// DATABASE_URL.
type cellFlags struct {
	nats natsFlags
	on   bool
	cell string
}

func (c *cellFlags) register(fs *flag.FlagSet) {
	c.nats.register(fs)
	on, _ := strconv.ParseBool(os.Getenv("ONCELEDGER_CELLS"))
	fs.BoolVar(&c.on, "cells", on, "find the database in the placement stored in NATS (onceledger cells): the database_url of -company's cell, or of -cell; DATABASE_URL is not used (env ONCELEDGER_CELLS)")
	fs.StringVar(&c.cell, "cell", "", "the cell whose database to use, from the placement stored in NATS (implies -cells); with -company, a company of another cell is refused")
}

// resolve sets *dsn to the database_url of company's cell (or -cell's
// where company is empty) when cells are in use, and leaves it otherwise.
func (c *cellFlags) resolve(ctx context.Context, dsn *string, company string) error {
	url, err := c.database(ctx, *dsn, company)
	if err != nil {
		return err
	}
	*dsn = url
	return nil
}

// database returns the database URL the tool uses: dsn without cells,
// else the database_url the placement gives company's cell (or -cell's
// where company is empty).
func (c *cellFlags) database(ctx context.Context, dsn, company string) (string, error) {
	if !c.on && c.cell == "" {
		return dsn, nil
	}
	if company == "" && c.cell == "" {
		return "", &usageError{"with -cells, -company or -cell says which cell's database to use"}
	}
	if errs := c.nats.validate(); len(errs) > 0 {
		return "", &usageError{errs[0].Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, err := c.nats.connect("onceledger placement lookup")
	if err != nil {
		return "", err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return "", err
	}
	p, _, err := cells.Load(ctx, js)
	if err != nil {
		return "", err
	}
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("the stored placement is invalid: %w", err)
	}
	var cell cells.Cell
	if company != "" {
		var ok bool
		if cell, ok = p.CellOf(company); !ok {
			part := cells.Partition(company, p.Partitions)
			if m := p.Moving; m != nil && m.Partition == part {
				return "", fmt.Errorf("company %s is in partition %d, which is moving from cell %s to cell %s: try again when the move is done (onceledger cells show)", company, part, m.From, m.To)
			}
			return "", fmt.Errorf("company %s is in partition %d, which no cell serves", company, part)
		}
		if c.cell != "" && cell.Name != c.cell {
			return "", fmt.Errorf("company %s is served by cell %s, not by cell %s", company, cell.Name, c.cell)
		}
	} else if cell, err = p.Cell(c.cell); err != nil {
		return "", err
	}
	if cell.DatabaseURL == "" {
		return "", fmt.Errorf("the placement gives cell %s no database_url: add it (onceledger cells set), or use DATABASE_URL without -cells", cell.Name)
	}
	return cell.DatabaseURL, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cellsNote ends the usage of the verbs that take cellFlags.
const cellsNote = `With cells (-cells, ONCELEDGER_CELLS=1, or -cell NAME), the database is the
database_url the placement stored in NATS gives -company's cell, or -cell;
its password, when the placement leaves it out, comes from PGPASSWORD or
~/.pgpass. See docs/cells.md.
`
