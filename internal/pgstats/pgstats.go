// Package pgstats gives a new database's tables their first statistics.
//
// PostgreSQL plans from the statistics autovacuum gathers, and a new
// database has none until autovacuum first looks at it (after
// autovacuum_naptime, a minute by default, and only at a table that
// changed by 50 rows and a tenth since). Without them the planner takes a
// company's rows for a two-hundredth of a table, so every index that
// begins with the company costs it the same; it takes the last it
// considered, and the generic plans the worker's transactions keep
// (internal/pgsettings) look an invoice up by its order through the
// listing's index, reading every invoice of the company, until the table
// is analyzed: measured with `onceledger bench` on a new database, the
// lookup took 3.9 ms a batch at 1,200 commands/s, a third of the
// database's time, and publish→result p99 was 176 ms instead of 43.
//
// First runs ANALYZE on each table that was written to and was never
// analyzed, once it holds MinRows changes. An ANALYZE makes the plans made
// without statistics be made again. Each table is analyzed once: then
// autovacuum keeps its statistics. A table the worker may not analyze (it
// does not own it) is skipped with PostgreSQL's warning, and not tried
// again.
package pgstats

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of First.
const (
	// MinRows is how many rows a table's statistics wait for: enough to
	// tell a column of a few companies from a unique one.
	MinRows = 500
	// Interval is how often the tables are looked at.
	Interval = 500 * time.Millisecond
	// For is how long they are: autovacuum has looked at the database by
	// then.
	For = 10 * time.Minute
)

// First analyzes, every interval until ctx ends or for has passed, the
// tables of pool's database that were never analyzed and changed by
// minRows rows or more since they were created (AnalyzeNew). It returns
// nil when ctx ends; a failed look is logged and tried again at the next.
func First(ctx context.Context, pool *pgxpool.Pool, minRows int64, interval, for_ time.Duration, logger *slog.Logger) error {
	deadline := time.Now().Add(for_)
	tried := map[string]bool{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if time.Now().After(deadline) {
			return nil
		}
		analyzed, err := AnalyzeNew(ctx, pool, minRows, tried)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			logger.Warn("pgstats: first statistics", "error", err)
		}
		if len(analyzed) > 0 {
			logger.Info("pgstats: analyzed tables that had no statistics", "tables", analyzed)
		}
	}
}

// AnalyzeNew runs ANALYZE on each table of the current schema that was
// never analyzed and changed by minRows rows or more, apart from those
// tried holds, and adds them to tried (when not nil). It returns those it
// analyzed.
func AnalyzeNew(ctx context.Context, db *pgxpool.Pool, minRows int64, tried map[string]bool) ([]string, error) {
	rows, err := db.Query(ctx, `
		SELECT relname FROM pg_stat_user_tables
		 WHERE schemaname = current_schema() AND last_analyze IS NULL AND last_autoanalyze IS NULL
		   AND n_mod_since_analyze >= $1
		 ORDER BY relname`, minRows)
	if err != nil {
		return nil, fmt.Errorf("look for tables without statistics: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look for tables without statistics: %w", err)
	}
	var analyzed []string
	for _, table := range tables {
		if tried[table] {
			continue
		}
		if tried != nil {
			tried[table] = true
		}
		if _, err := db.Exec(ctx, "ANALYZE "+pgx.Identifier{table}.Sanitize()); err != nil {
			return analyzed, fmt.Errorf("analyze %s: %w", table, err)
		}
		analyzed = append(analyzed, table)
	}
	return analyzed, nil
}
