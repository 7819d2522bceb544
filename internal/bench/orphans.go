package bench

import (
	"context"
	"log/slog"
	"time"

	"github.com/onceledger/onceledger/internal/throwaway"
)

// A run that is killed (SIGKILL, a test binary's -timeout) cannot clean up
// after itself. Its work directory and its database carry its owner (see
// throwaway.OwnerMark), and the next run on the same host removes what
// belongs to a process that no longer exists.
const (
	workDirPrefix = "onceledger-bench-"
	dbPrefix      = "onceledger_bench_"
)

func newWorkDir() (string, error) { return throwaway.MkdirOwned(workDirPrefix) }

func reapOrphans(ctx context.Context, adminDSN string, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	logger = logger.With("from", "bench")
	throwaway.ReapDirs(ctx, workDirPrefix, logger)
	if adminDSN != "" {
		throwaway.ReapDatabases(ctx, adminDSN, dbPrefix, logger)
	}
}
