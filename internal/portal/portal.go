package portal

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

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/console"
)

// basePath is where the portal is mounted.
const basePath = "/portal"

//go:embed templates/*.html
var templateFiles embed.FS

// assetFiles are the portal's own assets, beside the console's.
//
//go:embed assets
var assetFiles embed.FS

// Config configures a Portal.
type Config struct {
	// Pool is the worker's database. Required.
	Pool *pgxpool.Pool
	// Client sends the webhook_endpoint.* commands. Required.
	Client *client.Client
	// SessionTTL is how long a session lasts from sign-in. Defaults to 8h.
	SessionTTL time.Duration
	// CommandTimeout bounds how long a change waits for its command's
	// result. Defaults to 15s.
	CommandTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("portal: Config.Pool is required")
	case c.Client == nil:
		return errors.New("portal: Config.Client is required")
	case c.SessionTTL < 0:
		return fmt.Errorf("portal: SessionTTL %s is negative", c.SessionTTL)
	case c.CommandTimeout < 0:
		return fmt.Errorf("portal: CommandTimeout %s is negative", c.CommandTimeout)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.SessionTTL == 0 {
		c.SessionTTL = 8 * time.Hour
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = 15 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Portal serves the portal's pages under /portal/.
type Portal struct {
	cfg   Config
	pages map[string]*template.Template
	mux   *http.ServeMux
}

var titles = map[string]string{
	"signin": "Sign in", "link": "Open the portal", "endpoints": "Webhook endpoints", "endpoint": "Endpoint",
	"delivery": "Delivery", "outcome": "Outcome", "events": "Event catalogue", "error": "Error",
}

// New returns the portal of cfg. Mount it at /portal/.
func New(cfg Config) (*Portal, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	p := &Portal{cfg: cfg, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	for page := range titles {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("portal template %s: %w", page, err)
		}
		p.pages[page] = t
	}
	p.mux.Handle("GET "+basePath+"/static/", http.StripPrefix(basePath+"/static/", http.FileServerFS(console.Static())))
	assets, _ := fs.Sub(assetFiles, "assets")
	p.mux.Handle("GET "+basePath+"/assets/", http.StripPrefix(basePath+"/assets/", http.FileServerFS(assets)))
	p.mux.HandleFunc("GET "+basePath+"/signin", p.signinForm)
	p.mux.HandleFunc("POST "+basePath+"/signin", p.signin)
	p.mux.HandleFunc("GET "+basePath+"/link", p.linkForm)
	p.mux.HandleFunc("POST "+basePath+"/link", p.openLink)
	p.mux.HandleFunc("POST "+basePath+"/signout", p.authed(p.signout))
	p.mux.HandleFunc("GET "+basePath+"/{$}", p.authed(p.endpoints))
	p.mux.HandleFunc("POST "+basePath+"/endpoints", p.authed(p.createEndpoint))
	p.mux.HandleFunc("GET "+basePath+"/endpoints/{endpoint}", p.authed(p.endpoint))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/update", p.authed(p.updateEndpoint))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/disable", p.authed(p.disableEndpoint))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/enable", p.authed(p.enableEndpoint))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/rotate", p.authed(p.rotateSecret))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/test", p.authed(p.sendTest))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/replay-failed", p.authed(p.replayFailed))
	p.mux.HandleFunc("GET "+basePath+"/endpoints/{endpoint}/deliveries/{delivery}", p.authed(p.delivery))
	p.mux.HandleFunc("POST "+basePath+"/endpoints/{endpoint}/deliveries/{delivery}/replay", p.authed(p.replayDelivery))
	p.mux.HandleFunc("GET "+basePath+"/actions/{key}", p.authed(p.action))
	p.mux.HandleFunc("GET "+basePath+"/events", p.authed(p.events))
	p.mux.HandleFunc(basePath+"/", func(w http.ResponseWriter, r *http.Request) {
		p.render(w, http.StatusNotFound, "error", nil, errorPage{Title: "Not Found", Message: "There is no such page in the portal."})
	})
	return p, nil
}

func (p *Portal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	console.SetSecurityHeaders(w.Header())
	p.mux.ServeHTTP(w, r)
}

// authed runs h for a request with a session, whose POSTs carry the
// session's CSRF token. Without a session it sends the browser to the
// sign-in page; a POST without the CSRF token is 403.
func (p *Portal) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := p.session(r)
		if errors.Is(err, errNoSession) {
			http.Redirect(w, r, basePath+"/signin", http.StatusSeeOther)
			return
		}
		if err != nil {
			p.fail(w, r, nil, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodPost && !console.SameToken(r.PostFormValue(csrfField), s.CSRF) {
			p.render(w, http.StatusForbidden, "error", s, errorPage{Title: "Forbidden", Message: "The form's CSRF token is missing or wrong: reload the page and try again."})
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

func (p *Portal) render(w http.ResponseWriter, status int, page string, s *session, data any) {
	t := p.pages[page]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	title := titles[page]
	if e, ok := data.(errorPage); ok {
		title = e.Title
	}
	if err := t.ExecuteTemplate(w, "layout.html", view{Title: title, Session: s, Nav: page, Data: data}); err != nil {
		p.cfg.Logger.Warn("portal: render page", "page", page, "error", err)
	}
}

// problem is a refusal the portal shows with its status and message.
type problem struct {
	status int
	msg    string
}

func (e *problem) Error() string { return e.msg }

func notFound(what string) error { return &problem{http.StatusNotFound, what} }

func invalid(msg string) error { return &problem{http.StatusBadRequest, msg} }

// fail renders err: a problem with its status and message, anything else
// as 500 with a generic message (logged in full).
func (p *Portal) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var pr *problem
	if errors.As(err, &pr) {
		p.render(w, pr.status, "error", s, errorPage{Title: http.StatusText(pr.status), Message: pr.msg})
		return
	}
	p.cfg.Logger.Error("portal request failed", "path", r.URL.Path, "error", err)
	p.render(w, http.StatusInternalServerError, "error", s, errorPage{Title: http.StatusText(http.StatusInternalServerError), Message: "Something went wrong; try again shortly."})
}
