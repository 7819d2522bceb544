package pgcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindErrorExplainsAlternatives(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := find(filepath.Join(t.TempDir(), "*", "bin"))
	if err == nil {
		t.Fatal("Find succeeded with an empty PATH and no fallback directory")
	}
	msg := err.Error()
	for _, want := range []string{
		"initdb and pg_ctl missing",
		"DATABASE_URL",
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"apt-get install postgresql",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Find error %q does not mention %q", msg, want)
		}
	}
}

func TestFindUsesNewestFallback(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "13"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "pg_ctl"} {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := find(filepath.Join(root, "*", "bin"))
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	if want := filepath.Join(root, "15", "bin"); got != want {
		t.Fatalf("find = %q, want %q", got, want)
	}
}
