package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// startLimited serves a handler that reads the whole body within lim on a
// port of its own. The listener it returns tells what the server took.
func startLimited(t *testing.T, lim httpLimits) *countingListener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner, accepted: make(chan net.Addr, 64)}
	srv := serveHTTP(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		io.WriteString(w, "ok")
	}), lim, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { srv.Close() })
	return ln
}

// countingListener is the listener under the server's own limits: it
// reports the remote address of each connection accepted from it (while
// accepted has room) and counts the connections the server holds: read
// from and not yet closed. A connection refused beyond its address's
// share is closed unread, so it is not counted.
type countingListener struct {
	net.Listener
	accepted chan net.Addr

	mu      sync.Mutex
	holding int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.accepted <- c.RemoteAddr():
	default:
	}
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holding
}

func (l *countingListener) addr() string { return l.Addr().String() }

type countedConn struct {
	net.Conn
	l *countingListener

	mu             sync.Mutex
	counted, ended bool
}

func (c *countedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if !c.counted && !c.ended {
		c.counted = true
		c.l.mu.Lock()
		c.l.holding++
		c.l.mu.Unlock()
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *countedConn) Close() error {
	c.mu.Lock()
	if c.counted && !c.ended {
		c.l.mu.Lock()
		c.l.holding--
		c.l.mu.Unlock()
	}
	c.ended = true
	c.mu.Unlock()
	return c.Conn.Close()
}

// waitFor polls cond until it holds, failing the test after d with what
// says of the state then.
func waitFor(t *testing.T, d time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what())
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}

// closedWithin reports whether the server closed conn within d: reads
// end in EOF or a reset rather than a timeout.
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// A client sending its body at a byte a second is cut off at the read
// timeout instead of holding its connection.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	ln := startLimited(t, limitsFor(apiSettings{ReadTimeout: time.Second, BodyTimeout: time.Second, RequestTimeout: time.Second, MaxConns: 16, MaxConnsPerIP: 16}))
	conn, err := net.Dial("tcp", ln.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/x HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n")
	start := time.Now()
	done := make(chan bool, 1)
	go func() { done <- closedWithin(conn, 10*time.Second) }()
	for range 100 {
		if _, err := conn.Write([]byte("x")); err != nil {
			break
		}
		select {
		case closed := <-done:
			if !closed {
				t.Fatal("the connection was still open after 10 s")
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("cut off after %s, want about the 1 s read timeout", took)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("the whole body was sent at 5 bytes/s without the server cutting it off")
}

// A client that sends nothing is closed at the header timeout; beyond
// MaxConns connections wait to be accepted instead of each taking a
// goroutine and a descriptor.
func TestConnectionsAreBounded(t *testing.T) {
	t.Parallel()
	lim := limitsFor(apiSettings{ReadTimeout: 3 * time.Second, BodyTimeout: time.Second, RequestTimeout: time.Second, MaxConns: 1, MaxConnsPerIP: 1})
	ln := startLimited(t, lim)
	silent, err := net.Dial("tcp", ln.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The silent one is accepted first and holds the only place.
	select {
	case from := <-ln.accepted:
		if from.String() != silent.LocalAddr().String() {
			t.Fatalf("accepted %s, want the silent connection from %s", from, silent.LocalAddr())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the silent connection was not accepted")
	}

	second, err := net.Dial("tcp", ln.addr()) // the kernel completes the handshake
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	fmt.Fprintf(second, "GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
	answered := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(second), nil)
		if err == nil && resp.StatusCode == http.StatusOK {
			answered <- time.Since(start)
		}
		close(answered)
	}()
	select {
	case took, ok := <-answered:
		t.Fatalf("the second connection was served (%v, after %s) while the first held the only place", ok, took)
	case from := <-ln.accepted:
		t.Fatalf("%s was accepted while the first held the only place", from)
	case <-time.After(500 * time.Millisecond):
	}
	// The silent connection is dropped at the header timeout, and the
	// second is served.
	if !closedWithin(silent, lim.ReadHeader+2*time.Second) {
		t.Fatalf("a silent connection outlived the %s header timeout", lim.ReadHeader)
	}
	took, ok := <-answered
	if !ok || took > lim.ReadHeader+2*time.Second {
		t.Fatalf("the waiting connection was not served once the place was free (%v, %s)", ok, took)
	}
}

func TestLimitsLeaveRoomForACommandsWait(t *testing.T) {
	t.Parallel()
	lim := limitsFor(apiSettings{ReadTimeout: 30 * time.Second, BodyTimeout: 10 * time.Second, RequestTimeout: 10 * time.Second, MaxConns: 1024, MaxConnsPerIP: 128})
	if lim.Write <= lim.Read+10*time.Second || lim.ReadHeader > lim.Read || lim.Idle <= 0 {
		t.Fatalf("limits %+v: the write timeout must cover reading the body and waiting for the result", lim)
	}
	if lim.ReadHeader+lim.Body > lim.Read || lim.Body != 10*time.Second {
		t.Fatalf("limits %+v: headers and body must fit in the read timeout, the body in its own", lim)
	}
	if lim.MaxConns != 1024 || lim.PerIP != 128 {
		t.Fatalf("limits %+v lost MaxConns or PerIP", lim)
	}
	// A body timeout as long as the read timeout leaves the headers room;
	// a per-address limit above the total is the total.
	if lim := limitsFor(apiSettings{ReadTimeout: time.Second, BodyTimeout: time.Minute, MaxConns: 16, MaxConnsPerIP: 128}); lim.ReadHeader+lim.Body > lim.Read || lim.Body <= 0 || lim.PerIP != 16 {
		t.Fatalf("limits %+v: headers and body must fit in the read timeout, and PerIP in MaxConns", lim)
	}
}

// A command reads its body, then waits for its result longer than the
// body timeout: the body's deadline must not cut that wait short (the
// server reads on in the background, and a deadline there cancels the
// request).
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel()
	lim := limitsFor(apiSettings{ReadTimeout: 2 * time.Second, BodyTimeout: 300 * time.Millisecond, RequestTimeout: 2 * time.Second, MaxConns: 4, MaxConnsPerIP: 4})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(3 * lim.Body):
			io.WriteString(w, "waited")
		case <-r.Context().Done():
			http.Error(w, "the request was canceled while waiting", http.StatusServiceUnavailable)
		}
	}), lim, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer srv.Close()
	resp, err := http.Post("http://"+ln.Addr().String()+"/", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "waited" {
		t.Fatalf("%s: %s", resp.Status, body)
	}
}

// trickler holds one connection after another to addr from the local
// address ip: headers at once, then a body byte a second, as an attacker
// filling the server's places would. It records how each connection
// ended.
type trickler struct {
	addr string
	ip   string

	mu       sync.Mutex
	statuses map[string]int // first line of the answer, or "closed"
}

func (tr *trickler) run(ctx context.Context) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tr.ip)}}
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", tr.addr)
		if err != nil {
			// Loopback connections are not refused: this attacker gives
			// up, and the test says the flood was weaker than it claims.
			if ctx.Err() == nil {
				tr.mu.Lock()
				tr.statuses[floodDialFailed+err.Error()]++
				tr.mu.Unlock()
			}
			return
		}
		tr.hold(ctx, conn)
	}
}

func (tr *trickler) hold(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		line, err := bufio.NewReader(conn).ReadString('\n')
		status := strings.TrimSpace(line)
		if err != nil && status == "" {
			status = "closed"
		}
		tr.mu.Lock()
		tr.statuses[status]++
		tr.mu.Unlock()
	}()
	fmt.Fprintf(conn, "POST /v1/companies/create HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			conn.Close()
			<-ended
			return
		case <-ended:
			return
		case <-tick.C:
			conn.Write([]byte("x"))
		}
	}
}

// More trickling clients than one address may hold, and than the server
// holds in all, leave the health listener answering and a fresh request
// to the API answered: each address gets its share of places, beyond it
// connections are refused at once, and a trickled body is cut off at the
// body timeout instead of the read timeout.
func TestSlowClientFloodLeavesHealthAndAPIAnswering(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	lim := limitsFor(apiSettings{ReadTimeout: 30 * time.Second, BodyTimeout: time.Second, RequestTimeout: time.Second, MaxConns: 8, MaxConnsPerIP: 3})
	apiLn := startLimited(t, lim)
	api := apiLn.addr()
	healthLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	healthSrv := serveHTTP(healthLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	}), healthLimits, logger)
	defer healthSrv.Close()

	// All of 127.0.0.0/8 is this machine on Linux: four attacking
	// addresses, the test's requests from a fifth, 127.0.0.1.
	if c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).Dial("tcp", api); err != nil {
		t.Skipf("cannot connect from 127.0.0.2, needed to play several clients: %v", err)
	} else {
		c.Close()
	}
	// The flood outlasts the requests' own bounds, so that neither is
	// answered only because the flood ended; it is stopped once they are.
	ctx, stop := context.WithTimeout(context.Background(), 15*time.Second)
	defer stop()
	var wg sync.WaitGroup
	var attackers []*trickler
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
		tr := &trickler{addr: api, ip: ip, statuses: map[string]int{}}
		attackers = append(attackers, tr)
		for range 5 {
			wg.Add(1)
			go func() { defer wg.Done(); tr.run(ctx) }()
		}
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	// Every place is taken, a connection beyond an address's share was
	// refused and a trickled body was cut off: the flood is on.
	flood := func() map[string]int {
		total := map[string]int{}
		for _, tr := range attackers {
			tr.mu.Lock()
			for status, n := range tr.statuses {
				total[status] += n
			}
			tr.mu.Unlock()
		}
		return total
	}
	full := false
	waitFor(t, 10*time.Second, func() bool {
		full = full || apiLn.held() == lim.MaxConns
		total := flood()
		return full && total[floodRefused] > 0 && total[floodCutOff] > 0
	}, func() string {
		return fmt.Sprintf("the flood taking all %d places (taken at once: %v), refused beyond an address's share and cut off at the body timeout; its connections ended %v",
			lim.MaxConns, full, flood())
	})

	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + healthLn.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz during the flood: %s", resp.Status)
	}
	// Bounded so that a hang fails the test instead of stalling it; the
	// request waits for a place, which the body timeout frees.
	resp, err = hc.Post("http://"+api+"/v1/companies/create", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("a fresh request during the flood: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("a fresh request during the flood: %s %s", resp.Status, body)
	}

	stop()
	wg.Wait()
	total := flood()
	for status := range total {
		if strings.HasPrefix(status, floodDialFailed) {
			t.Errorf("an attacker could not connect, so the flood held fewer places than it should: %v", total)
		}
	}
	t.Logf("how the flood's connections ended: %v", total)
}

// How a trickled connection ends when refused beyond its address's share,
// and when its body is cut off.
const (
	floodRefused = "HTTP/1.1 503 Service Unavailable"
	floodCutOff  = "HTTP/1.1 408 Request Timeout"
	// floodDialFailed prefixes the error of a connection that was never made.
	floodDialFailed = "dial failed: "
)

// A header value with a raw LF (or another control character), or headers
// over the limit, never reach a handler: net/http answers in plain text and
// closes the connection, as docs/http-api.md says.
func TestMalformedHeadersGetAPlainTextAnswer(t *testing.T) {
	t.Parallel()
	calls := 0
	var mu sync.Mutex
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
	}), limitsFor(apiSettings{ReadTimeout: 5 * time.Second, BodyTimeout: time.Second, RequestTimeout: time.Second, MaxConns: 4, MaxConnsPerIP: 4}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer srv.Close()
	cases := []struct {
		name, header string
		status       int
	}{
		{"LF", "Idempotency-Key: order\n1041", http.StatusBadRequest},
		{"CR", "Idempotency-Key: order\r1041", http.StatusBadRequest},
		{"NUL", "Idempotency-Key: order\x001041", http.StatusBadRequest},
		{"64 KiB", "X-Padding: " + strings.Repeat("x", 80<<10), http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, c := range cases {
		name := c.name
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/companies/create HTTP/1.1\r\nHost: test\r\n%s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", c.header)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			conn.Close()
			t.Fatalf("%s: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
			!resp.Close || !strings.HasPrefix(string(body), fmt.Sprintf("%d %s", c.status, http.StatusText(c.status))) {
			t.Errorf("%s: %s %v %q", name, resp.Status, resp.Header, body)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("%s: the connection is still open after the 400 (%v)", name, err)
		}
		conn.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 0 {
		t.Fatalf("the handler ran %d times", calls)
	}
}
