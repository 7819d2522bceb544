package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Every page names its icon, served from the console's own files (the
// Content-Security-Policy allows only those), so that the browser does not
// ask for /favicon.ico, which nothing serves, on each page.
func TestPagesNameTheirIcon(t *testing.T) {
	t.Parallel()
	e := start(t)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(e.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := get("/console/signin")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<link rel="icon" type="image/svg+xml" href="/console/static/favicon.svg">`) {
		t.Fatalf("sign-in page: %s, without the icon's link:\n%s", resp.Status, page)
	}
	resp, icon := get("/console/static/favicon.svg")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/svg+xml") || !strings.HasPrefix(icon, "<svg") {
		t.Fatalf("the icon: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}
