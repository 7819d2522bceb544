package testenv

import "testing"

func TestWithDatabase(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgresql://u:p%40ss@db:5432?sslmode=require", "postgresql://u:p%40ss@db:5432/x?sslmode=require"},
		{"host=127.0.0.1 user=postgres dbname=test", "host=127.0.0.1 user=postgres dbname=test dbname=x"},
	}
	for _, c := range cases {
		if got := withDatabase(c.in, "x"); got != c.want {
			t.Errorf("withDatabase(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRedactHidesPassword(t *testing.T) {
	if got := redact("postgres://u:secret@h/db"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("redact = %q", got)
	}
	if got := redact("host=h password=secret"); got != "(keyword/value DSN)" {
		t.Errorf("redact = %q", got)
	}
}
