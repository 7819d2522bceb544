package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// httpLimits bound what one client can hold of the HTTP server: a
// connection that sends its headers or body too slowly, reads its answer
// too slowly or sits idle is closed, and connections beyond MaxConns wait
// in the listen queue until one closes.
type httpLimits struct {
	ReadHeader time.Duration // the request line and headers
	Read       time.Duration // the whole request, body included
	// Write bounds the time from the end of the headers to the end of
	// the answer: the body, the handler (a command waits up to the API's
	// request timeout for its result) and the write.
	Write    time.Duration
	Idle     time.Duration // between requests of a kept-alive connection
	MaxConns int
}

// limitsFor are the limits of a server whose commands wait up to
// requestTimeout for their results.
func limitsFor(read, requestTimeout time.Duration, maxConns int) httpLimits {
	return httpLimits{
		ReadHeader: min(5*time.Second, read),
		Read:       read,
		Write:      read + requestTimeout + 5*time.Second,
		Idle:       2 * time.Minute,
		MaxConns:   maxConns,
	}
}

// serveHTTP serves h on ln within lim until the returned server is shut
// down.
func serveHTTP(ln net.Listener, h http.Handler, lim httpLimits, logger *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeader,
		ReadTimeout:       lim.Read,
		WriteTimeout:      lim.Write,
		IdleTimeout:       lim.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := srv.Serve(netutil.LimitListener(ln, lim.MaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("HTTP server failed", "error", err)
		}
	}()
	return srv
}
