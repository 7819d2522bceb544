package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every Go package of the repository has its row in docs/development.md's
// table of where the code lives.
func TestEveryPackageIsInTheDevelopmentGuide(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			packages[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(packages) < 40 {
		t.Fatalf("found %d packages, fewer than the repository has: %v", len(packages), packages)
	}
	for pkg := range packages {
		if !strings.Contains(string(doc), "| `"+pkg+"` |") && !strings.Contains(string(doc), "| `"+pkg+"/` |") {
			t.Errorf("package %s has no row in docs/development.md's table", pkg)
		}
	}
}
