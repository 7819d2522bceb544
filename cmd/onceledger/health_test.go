package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/onceledger/onceledger/migrations"
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

// A running worker whose database falls behind its binary (a newer version
// rolled out before `migrate` ran) is not ready, and says why.
func TestReadyzReportsPendingMigrations(t *testing.T) {
	t.Parallel()
	dsn, _, httpAddr := runWorker(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DELETE FROM "+migrations.VersionTable+" WHERE version_id = (SELECT max(version_id) FROM "+migrations.VersionTable+")"); err != nil {
		t.Fatal(err)
	}
	if status, body := httpGetAny(t, "http://"+httpAddr+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "pending: run onceledger migrate") {
		t.Fatalf("/readyz with a migration missing: %d %s", status, body)
	}
}
