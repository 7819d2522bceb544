package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// /healthz names the version after the "ok" probes read, and healthcheck
// says "ok" when the probe succeeds and nothing else.
func TestHealthzNamesTheVersion(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(healthHandler(nil, nil, nil, nil))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := "ok\nversion: " + buildVersion() + "\n"; resp.StatusCode != http.StatusOK || string(body) != want {
		t.Fatalf("/healthz: %s %q, want 200 %q", resp.Status, body, want)
	}

	addr := strings.TrimPrefix(srv.URL, "http://")
	if code, out, errOut := invoke(context.Background(), "", "healthcheck", "-health", addr); code != 0 || out != "ok\n" || errOut != "" {
		t.Fatalf("healthcheck: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut := invoke(context.Background(), "", "healthcheck", "-health", addr, "-path", "/nothing")
	if code != 1 || out != "" || !strings.Contains(errOut, "/nothing answered 404") {
		t.Fatalf("healthcheck of a missing path: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
