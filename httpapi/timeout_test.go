package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A body that stops arriving before the server's read deadline is answered
// 408 request_timeout, retryable, as a problem that says nothing of the
// connection (no addresses, no "i/o timeout"), and the connection closes.
func TestBodyCutOffByTheReadTimeoutIs408(t *testing.T) {
	t.Parallel()
	e := newAPI(t, Config{})
	token := e.token("acme")
	srv := httptest.NewUnstartedServer(e.api)
	srv.Config.ReadTimeout = time.Second
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/companies/create HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer %s\r\n"+
		"Idempotency-Key: slow-body\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":", token)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/problem+json" || !resp.Close {
		t.Fatalf("%s %v: %s", resp.Status, resp.Header, body)
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if p.Code != codeRequestTimeout || p.Status != http.StatusRequestTimeout || !p.Retryable || p.Type != "urn:onceledger:problem:request_timeout" {
		t.Fatalf("problem %+v", p)
	}
	for _, leak := range []string{"127.0.0.1", "tcp", "i/o timeout", srv.Listener.Addr().String()} {
		if strings.Contains(string(body), leak) {
			t.Errorf("the answer holds %q: %s", leak, body)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the connection is still open after the 408 (%v)", err)
	}
}
