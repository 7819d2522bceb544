package ledger_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Every error code the ledger declares is in docs/protocol.md's list of
// codes and in its table of what each code does to its key: a code added
// without its line there fails here.
func TestEveryCodeIsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, value := range v.Values {
				if lit, ok := value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					code, _ := strconv.Unquote(lit.Value)
					codes = append(codes, code)
				}
			}
		}
	}
	if len(codes) < 10 {
		t.Fatalf("found %d codes in errors.go: %v; the test no longer reads them", len(codes), codes)
	}
	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "Error codes (append-only")
	table := strings.Index(text, "What a result does to its key, by code:")
	end := strings.Index(text, "Producers: one key per logical operation")
	if start < 0 || table < start || end < table {
		t.Fatal("docs/protocol.md no longer has the list of codes followed by the table of what each does to its key")
	}
	list, rows := text[start:table], text[table:end]
	for _, c := range codes {
		if !strings.Contains(list, "`"+c+"`") {
			t.Errorf("code %s is not in docs/protocol.md's list of error codes", c)
		}
		if !strings.Contains(rows, "`"+c+"`") {
			t.Errorf("code %s has no row in docs/protocol.md's table of what each code does to its key", c)
		}
	}
}
