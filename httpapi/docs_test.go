package httpapi

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// routeSpan is a route in docs/http-api.md's table: "`POST /v1/a/b`", and
// the "`/c`" spans after it in the same row, which name /v1/a/c.
var (
	routeSpan = regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE) (/v1/[^`?]*)[^`]*`((?:, `/[^`]+`)*)")
	moreSpan  = regexp.MustCompile("`(/[^`]+)`")
	// A path segment with a parameter, {name} or <name>.json, whatever
	// its name.
	pathParam = regexp.MustCompile(`/[^/]*(\{[^}]*\}|<[^>]*>)[^/]*`)
)

// Every route the HTTP API serves is in docs/http-api.md's table, and the
// table names no route the API does not serve.
func TestEveryRouteIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range routeSpan.FindAllStringSubmatch(line, -1) {
			method, path := m[1], pathParam.ReplaceAllString(m[2], "/{}")
			documented[method+" "+path] = true
			for _, more := range moreSpan.FindAllStringSubmatch(m[3], -1) {
				base := path[:strings.LastIndex(path, "/")]
				documented[method+" "+base+more[1]] = true
			}
		}
	}
	s := &Server{mux: http.NewServeMux()}
	s.routes()
	served := map[string]bool{}
	for _, p := range s.patterns {
		served[pathParam.ReplaceAllString(p, "/{}")] = true
	}
	var missing, stale []string
	for r := range served {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !served[r] {
			stale = append(stale, r)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("routes the API serves that docs/http-api.md's table does not list: %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("routes docs/http-api.md's table lists that the API does not serve: %v", stale)
	}
	if len(served) < 20 {
		t.Errorf("only %d routes found: %v", len(served), served)
	}
}
