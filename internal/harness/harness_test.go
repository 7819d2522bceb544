package harness_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// No package of the product imports the harness: only tests, the
// harness itself and the test harnesses beside what they build
// (internal/audit/audittest) do.
func TestTheProductDoesNotImportTheHarness(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	const harness = "github.com/onceledger/onceledger/internal/harness"
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == filepath.Join("internal", "harness") || strings.HasSuffix(rel, "test") || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, harness) {
				t.Errorf("%s imports %s: the product does not run on the tests' harness", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk did not find the module", checked)
	}
}
