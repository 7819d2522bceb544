// Package browsertest drives a headless Chromium for the browser tests of
// the operator console and the webhook portal: Debian's chromium package,
// a profile of the test's own, and each step bounded.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is where Debian's chromium package puts the browser.
const Chromium = "/usr/bin/chromium"

// StepTimeout bounds one step of a browser test.
const StepTimeout = 30 * time.Second

// Start starts a headless Chromium of the test's own (its own profile
// directory), closed when the test ends. Without Chromium the test fails
// saying how to install it: what pages names is not tested otherwise.
func Start(t *testing.T, pages string) context.Context {
	t.Helper()
	path := Chromium
	if _, err := os.Stat(path); err != nil {
		p, lerr := exec.LookPath("chromium")
		if lerr != nil {
			t.Fatalf("the browser tests of %s need Chromium at %s or on PATH: install it (Debian: apt-get install chromium; .ci/run does)", pages, Chromium)
		}
		path = p
	}
	// Made before the browser's cleanup is registered, so it is removed
	// after the browser has exited.
	profile := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first action starts the browser, which lives as long as its
	// context: that one gets no timeout, the later ones do (Do, Value).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	return ctx
}

// Do runs steps within StepTimeout, failing the test with what on error.
func Do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Value runs a, a read, within StepTimeout and returns its value, failing
// the test with what on error. A read that lands while the page is being
// replaced after a click that navigated can hold a node of the page that
// went ("No node with given id"); such a read is tried again, a few times.
func Value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	for try := 1; ; try++ {
		stepCtx, cancel := context.WithTimeout(ctx, StepTimeout)
		v, err := chromedp.Run(stepCtx, a)
		cancel()
		if err == nil {
			return v
		}
		if try < 5 && staleNode(err) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		t.Fatalf("%s: %v", what, err)
	}
}

// staleNode reports whether err is the browser's answer about a node of a
// document that has been replaced.
func staleNode(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No node with given id") || strings.Contains(s, "Could not find node with given id")
}

// Screenshot saves the page as name.png in dir: the whole page, or with
// window only what the window shows.
func Screenshot(t *testing.T, ctx context.Context, dir, name string, window bool) {
	t.Helper()
	shot := chromedp.FullScreenshot(100)
	if window {
		shot = chromedp.CaptureScreenshot()
	}
	png := Value(t, ctx, "screenshot "+name, shot)
	if len(png) < 1000 {
		t.Fatalf("screenshot %s: %d bytes", name, len(png))
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
