package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const teardownTimeout = 2 * time.Minute

var (
	mainCalled atomic.Bool

	teardownMu   sync.Mutex
	teardowns    []func(context.Context) error
	teardownOnce sync.Once
	teardownErr  error
)

// Main runs the tests and then releases what testenv set up for the whole
// binary. Call it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	mainCalled.Store(true)

	// Without this, Ctrl-C would leave the throwaway cluster running: it is a
	// daemon in its own session and never sees the terminal's signal.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "testenv: %v received, cleaning up\n", sig)
			if err := teardown(); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: cleanup: %v\n", err)
			}
			os.Exit(1)
		case <-done:
		}
	}()

	code := m.Run()

	signal.Stop(sigs)
	close(done)
	if err := teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: cleanup: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func requireMain(t testing.TB) {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("testenv: this package's TestMain must call testenv.Main(m), " +
			"otherwise the throwaway PostgreSQL cluster and template databases outlive the tests")
	}
}

// onTeardown registers fn to run after all tests, in reverse order of
// registration so that databases are dropped before their server stops.
func onTeardown(fn func(context.Context) error) {
	teardownMu.Lock()
	defer teardownMu.Unlock()
	teardowns = append(teardowns, fn)
}

func teardown() error {
	teardownOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		defer cancel()
		teardownMu.Lock()
		fns := teardowns
		teardowns = nil
		teardownMu.Unlock()
		var errs []error
		for i := len(fns) - 1; i >= 0; i-- {
			errs = append(errs, fns[i](ctx))
		}
		teardownErr = errors.Join(errs...)
	})
	return teardownErr
}
