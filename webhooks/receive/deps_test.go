package receive_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// A service that receives onceledger webhooks imports this package and
// gets the standard library, pgx and what pgx needs: none of the worker
// (NATS, Prometheus, Watermill, the ledger, the outbox, …), nothing else of
// onceledger, and no other third party.
func TestDependsOnStandardLibraryAndPgxOnly(t *testing.T) {
	t.Parallel()
	self, deps := goList(t, ".")
	var pgx []string
	for _, d := range deps {
		if d.path == "github.com/jackc/pgx/v5" || strings.HasPrefix(d.path, "github.com/jackc/pgx/v5/") {
			pgx = append(pgx, d.path)
		}
	}
	if len(pgx) == 0 {
		t.Fatal("go list shows no pgx package; the test no longer sees the dependencies")
	}
	// pgx's own dependencies come with it; anything else is ours to answer for.
	_, pgxDeps := goList(t, pgx...)
	allowed := map[string]bool{}
	for _, d := range pgxDeps {
		allowed[d.path] = true
	}
	var bad []string
	for _, d := range deps {
		if d.standard || d.path == self || allowed[d.path] {
			continue
		}
		bad = append(bad, d.path)
	}
	if len(bad) > 0 {
		t.Errorf("%s depends on packages outside the standard library and pgx:\n\t%s", self, strings.Join(bad, "\n\t"))
	}

	// Named, so that a change to how go list reports cannot hide them.
	for _, d := range deps {
		for _, banned := range []string{"github.com/onceledger/", "github.com/nats-io/", "github.com/prometheus/",
			"github.com/ThreeDotsLabs/", "github.com/google/uuid", "go.opentelemetry.io/", "github.com/shopspring/"} {
			if strings.HasPrefix(d.path, banned) && d.path != self {
				t.Errorf("%s depends on %s", self, d.path)
			}
		}
	}
	if !slices.ContainsFunc(deps, func(d dep) bool { return d.path == "net/http" && d.standard }) {
		t.Error("go list does not show net/http as a standard dependency; the test no longer sees the dependencies")
	}
}

type dep struct {
	path     string
	standard bool
}

// goList returns the import path of the first of pkgs and every package
// pkgs depend on, themselves included.
func goList(t *testing.T, pkgs ...string) (string, []dep) {
	t.Helper()
	self := strings.TrimSpace(string(goCommand(t, "list", "-f", "{{.ImportPath}}", pkgs[0])))
	out := goCommand(t, append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}"}, pkgs...)...)
	var deps []dep
	for line := range strings.Lines(string(out)) {
		path, std, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			t.Fatalf("go list printed %q", line)
		}
		deps = append(deps, dep{path: path, standard: std == "true"})
	}
	return self, deps
}

func goCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
