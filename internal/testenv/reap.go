package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/onceledger/onceledger/internal/pgcluster"
)

const (
	clusterDirPrefix = "onceledger-testenv-pg-"
	ownerFile        = "owner.pid"
)

// reapStale stops and removes throwaway clusters whose test binary died
// without running Main's teardown (SIGKILL, a -timeout panic). Clusters of
// live binaries, and directories whose owner is unknown, are left alone.
func reapStale(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), clusterDirPrefix+"*"))
	for _, dir := range dirs {
		if !orphaned(dir) {
			continue
		}
		if err := reap(ctx, dir); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: could not clean up orphaned cluster %s: %v\n", dir, err)
		}
	}
}

func orphaned(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func reap(ctx context.Context, dir string) error {
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); err == nil {
		// Start adopts the running server, which gives us a handle to stop it.
		c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: data})
		if err != nil {
			return fmt.Errorf("adopt: %w", err)
		}
		if err := c.Stop(ctx); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}
