package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// startLimited serves a handler that reads the whole body within lim on a
// port of its own.
func startLimited(t *testing.T, lim httpLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		io.WriteString(w, "ok")
	}), lim, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
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
	addr := startLimited(t, limitsFor(time.Second, time.Second, 16))
	conn, err := net.Dial("tcp", addr)
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
	lim := limitsFor(3*time.Second, time.Second, 1)
	addr := startLimited(t, lim)
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(100 * time.Millisecond) // the silent one is accepted first

	second, err := net.Dial("tcp", addr) // the kernel completes the handshake
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
	lim := limitsFor(30*time.Second, 10*time.Second, 1024)
	if lim.Write <= lim.Read+10*time.Second || lim.ReadHeader > lim.Read || lim.Idle <= 0 {
		t.Fatalf("limits %+v: the write timeout must cover reading the body and waiting for the result", lim)
	}
	if lim.MaxConns != 1024 {
		t.Fatalf("limits %+v lost MaxConns", lim)
	}
}
