package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/netutil"
)

// httpLimits bound what one client can hold of the HTTP server: a
// connection that sends its headers or body too slowly, reads its answer
// too slowly or sits idle is closed; beyond PerIP connections from one
// address are refused, and beyond MaxConns in all they wait in the listen
// queue until one closes.
type httpLimits struct {
	ReadHeader time.Duration // the request line and headers
	// Body bounds the body, from the end of the headers. It is at most
	// Read-ReadHeader, so Read still bounds the whole request: a client
	// trickling a body is cut off after Body, not after Read.
	Body time.Duration
	Read time.Duration // the whole request, body included
	// Write bounds the time from the end of the headers to the end of
	// the answer: the body, the handler (a command waits up to the API's
	// request timeout for its result) and the write.
	Write    time.Duration
	Idle     time.Duration // between requests of a kept-alive connection
	MaxConns int
	// PerIP is the most connections one remote address may hold, so a
	// single client cannot take every place; 0 leaves it unbounded.
	PerIP int
}

// limitsFor are the limits of the API server a configures.
func limitsFor(a apiSettings) httpLimits {
	header := min(5*time.Second, a.ReadTimeout/2)
	return httpLimits{
		ReadHeader: header,
		Body:       min(a.BodyTimeout, a.ReadTimeout-header),
		Read:       a.ReadTimeout,
		Write:      a.ReadTimeout + a.RequestTimeout + 5*time.Second,
		Idle:       2 * time.Minute,
		MaxConns:   a.MaxConns,
		PerIP:      min(a.MaxConnsPerIP, a.MaxConns),
	}
}

// healthLimits are the limits of the health listener: probes and scrapers
// send no bodies and few connections, and /readyz answers within 3 s.
var healthLimits = httpLimits{
	ReadHeader: 2 * time.Second,
	Read:       5 * time.Second,
	Write:      10 * time.Second,
	Idle:       30 * time.Second,
	MaxConns:   64,
}

// serveHTTP serves h on ln within lim until the returned server is shut
// down.
func serveHTTP(ln net.Listener, h http.Handler, lim httpLimits, logger *slog.Logger) *http.Server {
	if lim.Body > 0 {
		h = bodyDeadline(h, lim.Body)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeader,
		ReadTimeout:       lim.Read,
		WriteTimeout:      lim.Write,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	if lim.PerIP > 0 {
		ln = &perIPListener{Listener: ln, max: lim.PerIP, conns: map[netip.Addr]int{}}
	}
	go func() {
		if err := srv.Serve(netutil.LimitListener(ln, lim.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server failed", "error", err)
		}
	}()
	return srv
}

// bodyDeadline gives the body of a request d from the end of its headers.
// The server's ReadTimeout runs from the start of the request for headers
// and body together; a client that sends its headers at once and then a
// byte a second would hold its connection for all of it. The deadline
// covers what the server drains of a body the handler left unread, too.
// net/http lifts it when the body has been read whole, before it reads on
// in the background to notice the client leaving, so it does not cut short
// a command waiting for its result (TestBodyDeadlineEndsWithTheBody).
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			// An error means a connection without deadlines: nothing to
			// shorten.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}

// perIPListener refuses a connection from an address that already holds
// max: it is answered 503 and closed before anything is read.
type perIPListener struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[netip.Addr]int
}

// refusal is what a refused connection is told, if it still listens.
const refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 41\r\n\r\ntoo many connections from your address.\r\n"

func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		if l.conns[ip] >= l.max {
			l.mu.Unlock()
			// A fresh socket's send buffer is empty: the write does not
			// block the accept loop, and the deadline makes sure of it.
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = io.WriteString(c, refusal)
			c.Close()
			continue
		}
		l.conns[ip]++
		l.mu.Unlock()
		return &perIPConn{Conn: c, l: l, ip: ip}, nil
	}
}

func (l *perIPListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[ip]--; l.conns[ip] <= 0 {
		delete(l.conns, ip)
	}
}

// remoteIP is the address a connection comes from; IPv4-mapped IPv6
// addresses count as the IPv4 address they carry.
func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap.Addr().Unmap()
}

type perIPConn struct {
	net.Conn
	l    *perIPListener
	ip   netip.Addr
	once sync.Once
}

func (c *perIPConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
