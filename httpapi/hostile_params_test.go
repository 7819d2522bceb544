package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testworker"
)

// databaseText is what PostgreSQL's and pgx's messages hold and an answer
// never should.
var databaseText = []string{"SQLSTATE", "invalid byte sequence", "ERROR:", "pgx", "pgconn", "encoding \"UTF8\"", "0x00"}

// Every route that is not a command, with a NUL byte and with bytes that
// are not UTF-8 in each of its documented query and path parameters, is
// answered with a problem that holds no database text, and not with a 5xx
// other than a retryable 503.
func TestHostileParametersNeverReachTheAnswer(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	testworker.Start(t, e.dsn, e.natsURL, nil)
	acme := e.token("acme")
	// The company exists, so that reads get as far as their queries.
	e.setup(acme)

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	commands := map[string]bool{}
	for _, rt := range commandRoutes {
		commands["POST "+rt.path] = true
	}
	// Values the other parameters of a route take, so that each request
	// gets past the checks of the parameters it does not test.
	valid := map[string]string{
		"limit": "10", "after": "", "customer_id": "c-1", "from": "2026-01-01", "to": "2026-12-31",
		"date": "2026-06-30", "currency": "company", "period": "2026-06",
		"invoice": "INV-2026-000001", "key": "k-1", "file": "invoice.create.json",
		"endpoint": "0190b7a0-0000-7000-8000-000000000000",
	}
	bad := map[string]string{"NUL": "a\x00b", "not UTF-8": "a\xff\xfeb", "NUL alone": "\x00"}

	walked := 0
	for _, pattern := range e.api.patterns {
		if commands[pattern] {
			continue
		}
		method, path, _ := strings.Cut(pattern, " ")
		var op struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		}
		raw, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Fatalf("%s is not in openapi.json", pattern)
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatal(err)
		}
		// A parameter the route does not know is checked too.
		params := append(op.Parameters, struct {
			Name string `json:"name"`
			In   string `json:"in"`
		}{"unknown", "query"})
		for _, target := range params {
			if target.In != "query" && target.In != "path" {
				continue
			}
			for label, value := range bad {
				p := path
				q := url.Values{}
				for _, other := range params {
					v := valid[other.Name]
					if other.Name == target.Name {
						v = value
					}
					switch other.In {
					case "path":
						p = strings.Replace(p, "{"+other.Name+"}", url.PathEscape(v), 1)
					case "query":
						if v != "" {
							q.Set(other.Name, v)
						}
					}
				}
				if len(q) > 0 {
					p += "?" + q.Encode()
				}
				r := e.do(method, p, acme, "", nil)
				walked++
				where := pattern + " " + target.Name + " " + label
				for _, text := range databaseText {
					if strings.Contains(string(r.body), text) {
						t.Errorf("%s: answer holds %q: %d %s", where, text, r.status, r.body)
					}
				}
				if r.status >= 500 {
					if r.status != http.StatusServiceUnavailable || !r.problem(t).Retryable {
						t.Errorf("%s: %d %s", where, r.status, r.body)
					}
				}
				if r.status != http.StatusBadRequest && r.status != http.StatusNotFound {
					t.Errorf("%s: %d, want 400 (or 404): %s", where, r.status, r.body)
				}
			}
		}
	}
	if walked < 30 {
		t.Fatalf("walked only %d requests", walked)
	}
}
