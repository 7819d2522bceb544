package bench

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// StatementCost is one statement's share of a phase's commands: its calls
// and its execution time per command, as pg_stat_statements counts them.
// A statement's time includes its waits for a core and for locks, and a
// statement's time includes that of the statements its triggers run
// (Nested marks those), so the times do not add up to the database's CPU.
type StatementCost struct {
	Query string `json:"query"`
	// Nested: run by a trigger or a function, not sent by a client.
	Nested       bool    `json:"nested"`
	CallsPerCmd  float64 `json:"calls_per_command"`
	MicrosPerCmd float64 `json:"us_per_command"`
}

// FunctionCost is one PL/pgSQL function's share (pg_stat_user_functions):
// the books' and the webhooks' triggers, whose statements are also among
// the nested statements.
type FunctionCost struct {
	Function     string  `json:"function"`
	CallsPerCmd  float64 `json:"calls_per_command"`
	MicrosPerCmd float64 `json:"us_per_command"`
}

// statementsShown is how many statements and functions a cost keeps, the
// costliest first.
const statementsShown = 15

// stmtKey names a statement in pg_stat_statements: the same text run by a
// client and by a trigger is counted apart.
type stmtKey struct {
	id       int64
	toplevel bool
}

type stmtTotals struct {
	calls  int64
	micros float64
	query  string
}

// statementsSample is a reading of the run's database's statement and
// function counters.
type statementsSample struct {
	stmts map[stmtKey]stmtTotals
	funcs map[string]stmtTotals
}

// statementsReady makes pg_stat_statements readable in the run's database,
// or says what the server lacks.
func (e *Env) statementsReady(ctx context.Context) error {
	if _, err := e.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return fmt.Errorf("bench -statements: create extension pg_stat_statements (the run needs a superuser): %w", err)
	}
	var n int64
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_statements`).Scan(&n); err != nil {
		return fmt.Errorf("bench -statements: the server needs shared_preload_libraries = 'pg_stat_statements' (a throwaway cluster, without DATABASE_URL, is started with it): %w", err)
	}
	return nil
}

// readStatements reads the counters of the run's database. The readings'
// own statements are left out.
func (e *Env) readStatements(ctx context.Context) (statementsSample, error) {
	s := statementsSample{stmts: map[stmtKey]stmtTotals{}, funcs: map[string]stmtTotals{}}
	rows, err := e.pool.Query(ctx, `
		SELECT queryid, toplevel, calls, total_exec_time * 1000, query FROM pg_stat_statements
		 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		   AND queryid IS NOT NULL AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_stat_user_functions%'`)
	if err != nil {
		return s, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	for rows.Next() {
		var k stmtKey
		var t stmtTotals
		if err := rows.Scan(&k.id, &k.toplevel, &t.calls, &t.micros, &t.query); err != nil {
			rows.Close()
			return s, fmt.Errorf("read pg_stat_statements: %w", err)
		}
		s.stmts[k] = t
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	rows, err = e.pool.Query(ctx, `SELECT funcname, calls, total_time * 1000 FROM pg_stat_user_functions`)
	if err != nil {
		return s, fmt.Errorf("read pg_stat_user_functions: %w", err)
	}
	for rows.Next() {
		var name string
		var t stmtTotals
		if err := rows.Scan(&name, &t.calls, &t.micros); err != nil {
			rows.Close()
			return s, fmt.Errorf("read pg_stat_user_functions: %w", err)
		}
		s.funcs[name] = t
	}
	return s, rows.Err()
}

// statementsBetween is what each statement and function cost per command
// between two readings, the costliest first.
func statementsBetween(a, b statementsSample, commands int) ([]StatementCost, []FunctionCost) {
	if commands <= 0 {
		return nil, nil
	}
	n := float64(commands)
	var stmts []StatementCost
	for k, t := range b.stmts {
		calls, micros := t.calls-a.stmts[k].calls, t.micros-a.stmts[k].micros
		if calls <= 0 {
			continue
		}
		stmts = append(stmts, StatementCost{Query: shortQuery(t.query), Nested: !k.toplevel,
			CallsPerCmd: float64(calls) / n, MicrosPerCmd: micros / n})
	}
	var funcs []FunctionCost
	for name, t := range b.funcs {
		calls, micros := t.calls-a.funcs[name].calls, t.micros-a.funcs[name].micros
		if calls <= 0 {
			continue
		}
		funcs = append(funcs, FunctionCost{Function: name, CallsPerCmd: float64(calls) / n, MicrosPerCmd: micros / n})
	}
	slices.SortFunc(stmts, func(x, y StatementCost) int {
		return cmp.Or(cmp.Compare(y.MicrosPerCmd, x.MicrosPerCmd), strings.Compare(x.Query, y.Query))
	})
	slices.SortFunc(funcs, func(x, y FunctionCost) int {
		return cmp.Or(cmp.Compare(y.MicrosPerCmd, x.MicrosPerCmd), strings.Compare(x.Function, y.Function))
	})
	return stmts[:min(len(stmts), statementsShown)], funcs[:min(len(funcs), statementsShown)]
}

var spaces = regexp.MustCompile(`\s+`)

// shortQuery is a statement's text on one line, cut to what names it.
func shortQuery(q string) string {
	q = strings.TrimSpace(spaces.ReplaceAllString(q, " "))
	if r := []rune(q); len(r) > 90 {
		q = string(r[:89]) + "…"
	}
	return q
}
