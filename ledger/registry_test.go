package ledger_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// producers publish commands as a service would, by the names on the wire:
// the test harnesses that play a producer. Everything else in the module
// reads a command's name from its type.
var producers = []string{
	"internal/audit/audittest",
	"internal/harness/testworker",
}

// A command's name is written once, in its type's CommandName: the
// registry, the kinds, the HTTP routes, the trail and the fault suite read
// it from there, so a new command touches its type and not a list of
// names scattered over the tree.
func TestACommandsNameIsWrittenOnce(t *testing.T) {
	names := ledger.CommandNames()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || slices.Contains(producers, filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncDecl); ok && fn.Name.Name == "CommandName" && fn.Recv != nil {
				return false // where the name belongs
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && slices.Contains(names, s) {
				t.Errorf("%s: command name %q written out: read it from the command's type (new(ledger.T).CommandName())", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files under %s, expected the module's", checked, root)
	}
}
