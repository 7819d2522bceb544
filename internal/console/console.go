package console

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/ops"
)

// basePath is where the console is mounted.
const basePath = "/console"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// securityHeaders go on every answer. No inline script or style is
// allowed: htmx is configured by a meta tag, and every style is in
// console.css.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "same-origin",
}

// Config configures a Console.
type Config struct {
	// Pool is the worker's database. Required.
	Pool *pgxpool.Pool
	// JS reaches the worker's streams. Required.
	JS jetstream.JetStream
	// CommandStream and Durable name the command stream and its consumer,
	// whose backlog the overview shows. Default to consumer.DefaultStream
	// and consumer.DefaultDurable.
	CommandStream string
	Durable       string
	// DeadLetterStream defaults to ops.DeadLetterStream.
	DeadLetterStream string
	// SessionTTL is how long a session lasts from sign-in. Defaults to 12h.
	SessionTTL time.Duration
	// RefreshEvery is how often the overview reads its figures again.
	// Defaults to 5s.
	RefreshEvery time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("console: Config.Pool is required")
	case c.JS == nil:
		return errors.New("console: Config.JS is required")
	case c.SessionTTL < 0:
		return fmt.Errorf("console: SessionTTL %s is negative", c.SessionTTL)
	case c.RefreshEvery != 0 && c.RefreshEvery < 100*time.Millisecond:
		return fmt.Errorf("console: RefreshEvery %s: use 100ms or more", c.RefreshEvery)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.CommandStream == "" {
		c.CommandStream = consumer.DefaultStream
	}
	if c.Durable == "" {
		c.Durable = consumer.DefaultDurable
	}
	if c.DeadLetterStream == "" {
		c.DeadLetterStream = ops.DeadLetterStream
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.RefreshEvery == 0 {
		c.RefreshEvery = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Console serves the console's pages under /console/.
type Console struct {
	cfg   Config
	pages map[string]*template.Template
	mux   *http.ServeMux
	dlq   ops.DeadLetters
}

// New returns the console of cfg. Mount it at /console/.
func New(cfg Config) (*Console, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	c := &Console{cfg: cfg, pages: map[string]*template.Template{}, mux: http.NewServeMux(),
		dlq: ops.DeadLetters{JS: cfg.JS, DB: cfg.Pool, Stream: cfg.DeadLetterStream}}
	for _, page := range []string{"signin", "commands", "deadletters", "deadletter", "action", "webhooks", "books", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", page, err)
		}
		c.pages[page] = t
	}
	// The overview's figures are also served alone, for it to refresh them.
	overview, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/overview.html", "templates/stats.html")
	if err != nil {
		return nil, fmt.Errorf("console template overview: %w", err)
	}
	c.pages["overview"] = overview
	stats, err := template.New("stats.html").Funcs(funcs).ParseFS(templateFiles, "templates/stats.html")
	if err != nil {
		return nil, fmt.Errorf("console template stats: %w", err)
	}
	c.pages["stats"] = stats
	static, _ := fs.Sub(staticFiles, "static")
	c.mux.Handle("GET "+basePath+"/static/", http.StripPrefix(basePath+"/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET "+basePath+"/signin", c.signinForm)
	c.mux.HandleFunc("POST "+basePath+"/signin", c.signin)
	c.mux.HandleFunc("POST "+basePath+"/signout", c.authed(c.signout))
	c.mux.HandleFunc("GET "+basePath+"/{$}", c.authed(c.overview))
	c.mux.HandleFunc("GET "+basePath+"/stats", c.authed(c.stats))
	c.mux.HandleFunc("POST "+basePath+"/audit", c.authed(c.runAudit))
	c.mux.HandleFunc("GET "+basePath+"/commands", c.authed(c.commands))
	c.mux.HandleFunc("GET "+basePath+"/dead-letters", c.authed(c.deadLetters))
	c.mux.HandleFunc("GET "+basePath+"/dead-letters/{seq}", c.authed(c.deadLetter))
	c.mux.HandleFunc("POST "+basePath+"/dead-letters/{seq}/replay", c.authed(c.replayDeadLetter))
	c.mux.HandleFunc("POST "+basePath+"/dead-letters/{seq}/close", c.authed(c.closeDeadLetter))
	c.mux.HandleFunc("POST "+basePath+"/dead-letters/replay", c.authed(c.replaySelected))
	c.mux.HandleFunc("GET "+basePath+"/actions/{key}", c.authed(c.action))
	c.mux.HandleFunc("GET "+basePath+"/webhooks", c.authed(c.webhooks))
	c.mux.HandleFunc("POST "+basePath+"/webhooks/replay", c.authed(c.replayDelivery))
	c.mux.HandleFunc("GET "+basePath+"/books", c.authed(c.books))
	c.mux.HandleFunc("GET "+basePath+"/books/register", c.authed(c.register))
	return c, nil
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	c.mux.ServeHTTP(w, r)
}

// authed runs h for a request with a session, whose POSTs carry the
// session's CSRF token. Without a session it sends the browser to the
// sign-in page (htmx through HX-Redirect, as a polled fragment must not
// become the sign-in page); a POST without the CSRF token is 403.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if errors.Is(err, errNoSession) {
			if r.Header.Get("HX-Request") != "" {
				w.Header().Set("HX-Redirect", basePath+"/signin")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, basePath+"/signin", http.StatusSeeOther)
			return
		}
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodPost && !sameToken(r.PostFormValue(csrfField), s.CSRF) {
			c.render(w, r, http.StatusForbidden, "error", s, errorPage{Title: "Forbidden", Message: "The form's CSRF token is missing or wrong: reload the page and try again."})
			return
		}
		h(w, r, s)
	}
}

// view is what every page template gets.
type view struct {
	Title   string
	Session *session
	Nav     string
	Data    any
}

type errorPage struct {
	Title   string
	Message string
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, s *session, data any) {
	t := c.pages[page]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	name := "layout.html"
	if page == "stats" {
		name = "stats.html"
	}
	title := titles[page]
	if e, ok := data.(errorPage); ok {
		title = e.Title
	}
	if err := t.ExecuteTemplate(w, name, view{Title: title, Session: s, Nav: page, Data: data}); err != nil {
		c.cfg.Logger.Warn("console: render page", "page", page, "error", err)
	}
}

var titles = map[string]string{
	"signin": "Sign in", "overview": "Overview", "commands": "Commands", "deadletters": "Dead letters",
	"deadletter": "Dead letter", "action": "Outcome", "webhooks": "Webhook deliveries", "books": "Books", "error": "Error",
}

// fail renders err: an ops refusal with its status and message, anything
// else as 500 with a generic message (logged in full).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := http.StatusInternalServerError
	msg := "Something went wrong; the worker's log says what."
	switch ops.ErrorCode(err) {
	case ops.CodeNotFound:
		status, msg = http.StatusNotFound, err.Error()
	case ops.CodeInvalid:
		status, msg = http.StatusBadRequest, err.Error()
	case ops.CodeConflict:
		status, msg = http.StatusConflict, err.Error()
	default:
		c.cfg.Logger.Error("console request failed", "path", r.URL.Path, "error", err)
	}
	c.render(w, r, status, "error", s, errorPage{Title: http.StatusText(status), Message: msg})
}
