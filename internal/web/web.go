package web

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
)

//go:embed templates/*.html
var baseTemplates embed.FS

//go:embed static
var staticFiles embed.FS

// securityHeaders go on every answer. No inline script or style is
// allowed: htmx is configured by a meta tag, and every style is in a
// stylesheet.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "same-origin",
}

// Site is what the shared templates say of an app.
type Site struct {
	// Name is the app's one word ("console"): its cookies are
	// onceledger_<Name>, its log lines start with it.
	Name string
	// Base is the path the app is mounted at ("/console"), without a
	// trailing slash.
	Base string
	// Title follows each page's title in the browser's ("onceledger
	// console"); Brand is the header's home link.
	Title, Brand string
	// Home is the text of an error page's link back to Base.
	Home string
	// TokenLabel labels the sign-in form's token field.
	TokenLabel string
	// Stylesheets are the app's own, beside web.css, under Base.
	Stylesheets []string
}

// Config configures an App signed in as S (who a session is).
type Config[S any] struct {
	Site
	// Pool is the worker's database. Required.
	Pool *pgxpool.Pool
	// Templates holds the app's templates: nav.html defines "nav", "who"
	// and "signin-intro", and each page's file defines "content".
	Templates fs.FS
	// Pages maps each of the app's pages to its title and files (of
	// Templates). The pages "signin" and "error" are the base's.
	Pages map[string]Page
	// Fragments are files of Templates rendered alone (RenderFragment),
	// each executed by its file name.
	Fragments []string
	// Funcs are the templates' functions.
	Funcs template.FuncMap
	// Sessions says where sessions are kept and whose they are.
	Sessions Sessions[S]
	// Actions says where the outcomes of acting forms are kept.
	Actions Actions
	// SessionTTL is how long a session lasts from sign-in. Required.
	SessionTTL time.Duration
	// Refusal maps an error the app knows to its status and message; an
	// error it does not know is answered 500.
	Refusal func(error) (status int, message string, ok bool)
	// Outcome is the stored text of an action that failed. Defaults to
	// "failed: " and the error.
	Outcome func(error) string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Page is one page of an app.
type Page struct {
	Title string
	// Files are the page's template files; the page's name with .html
	// when empty.
	Files []string
}

// App serves one app's pages under its Base.
type App[S any] struct {
	cfg       Config[S]
	pages     map[string]*template.Template
	fragments map[string]*template.Template
	mux       *http.ServeMux
}

// Session is a signed-in session of S.
type Session[S any] struct {
	idHash []byte
	// CSRF is the token every POST of the session carries.
	CSRF string
	// Who the session is.
	Who S
}

// View is what every page template gets.
type View[S any] struct {
	Site    Site
	Title   string
	Session *Session[S]
	// Nav is the page's name, for the navigation to mark.
	Nav  string
	Data any
}

// ErrorPage is the data of the "error" page.
type ErrorPage struct {
	Title   string
	Message string
}

// New returns the app of cfg with its sign-in form, sign-out, static
// files and not-found page routed; the app adds its own routes with
// Public and Private.
func New[S any](cfg Config[S]) (*App[S], error) {
	switch {
	case cfg.Name == "" || cfg.Base == "":
		return nil, errors.New("web: Config.Name and Config.Base are required")
	case cfg.Pool == nil:
		return nil, fmt.Errorf("%s: Config.Pool is required", cfg.Name)
	case cfg.Sessions.Table == "" || cfg.Sessions.Find == nil || cfg.Sessions.Columns == nil:
		return nil, fmt.Errorf("%s: Config.Sessions is incomplete", cfg.Name)
	case cfg.Actions.Table == "" || cfg.Actions.Owner == "":
		return nil, fmt.Errorf("%s: Config.Actions is incomplete", cfg.Name)
	case cfg.SessionTTL <= 0:
		return nil, fmt.Errorf("%s: SessionTTL %s is not positive", cfg.Name, cfg.SessionTTL)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Refusal == nil {
		cfg.Refusal = func(error) (int, string, bool) { return 0, "", false }
	}
	if cfg.Outcome == nil {
		cfg.Outcome = func(err error) string { return "failed: " + err.Error() }
	}
	a := &App[S]{cfg: cfg, pages: map[string]*template.Template{}, fragments: map[string]*template.Template{}, mux: http.NewServeMux()}
	pages := map[string]Page{"signin": {Title: "Sign in"}, "error": {Title: "Error"}}
	for name, p := range cfg.Pages {
		pages[name] = p
	}
	for name, p := range pages {
		t, err := template.New("layout.html").Funcs(cfg.Funcs).ParseFS(baseTemplates, "templates/layout.html")
		if err == nil && (name == "signin" || name == "error") {
			t, err = t.ParseFS(baseTemplates, "templates/"+name+".html")
		}
		files := []string{"nav.html"}
		if name != "signin" && name != "error" {
			if len(p.Files) == 0 {
				files = append(files, name+".html")
			}
			files = append(files, p.Files...)
		}
		if err == nil {
			t, err = t.ParseFS(cfg.Templates, files...)
		}
		if err != nil {
			return nil, fmt.Errorf("%s template %s: %w", cfg.Name, name, err)
		}
		a.pages[name] = t
	}
	a.cfg.Pages = pages
	for _, f := range cfg.Fragments {
		t, err := template.New(f).Funcs(cfg.Funcs).ParseFS(cfg.Templates, f)
		if err != nil {
			return nil, fmt.Errorf("%s template %s: %w", cfg.Name, f, err)
		}
		a.fragments[f] = t
	}
	static, _ := fs.Sub(staticFiles, "static")
	a.mux.Handle("GET "+cfg.Base+"/static/", http.StripPrefix(cfg.Base+"/static/", http.FileServerFS(static)))
	a.mux.HandleFunc("GET "+cfg.Base+"/signin", func(w http.ResponseWriter, r *http.Request) {
		a.SigninPage(w, r, http.StatusOK, "")
	})
	a.Private("POST "+cfg.Base+"/signout", a.signout)
	a.mux.HandleFunc(cfg.Base+"/", func(w http.ResponseWriter, r *http.Request) {
		a.Render(w, http.StatusNotFound, "error", nil, ErrorPage{Title: "Not Found", Message: "There is no such page in the " + cfg.Name + "."})
	})
	return a, nil
}

// Public routes pattern to h, for anyone.
func (a *App[S]) Public(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// Private routes pattern to h for a request with a session, whose POSTs
// carry the session's CSRF token. Without a session it sends the browser
// to the sign-in page; a POST without the CSRF token is 403.
func (a *App[S]) Private(pattern string, h func(http.ResponseWriter, *http.Request, *Session[S])) {
	a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s, err := a.session(r)
		if errors.Is(err, errNoSession) {
			if r.Header.Get("HX-Request") != "" {
				w.Header().Set("HX-Redirect", a.cfg.Base+"/signin")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, a.cfg.Base+"/signin", http.StatusSeeOther)
			return
		}
		if err != nil {
			a.Fail(w, r, nil, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodPost && !sameToken(r.PostFormValue(csrfField), s.CSRF) {
			a.Render(w, http.StatusForbidden, "error", s, ErrorPage{Title: "Forbidden", Message: "The form's CSRF token is missing or wrong: reload the page and try again."})
			return
		}
		h(w, r, s)
	})
}

// ServeHTTP serves the app's routes with the security headers.
func (a *App[S]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	a.mux.ServeHTTP(w, r)
}

// Render renders page with data inside the layout. An ErrorPage's title
// is the page's.
func (a *App[S]) Render(w http.ResponseWriter, status int, page string, s *Session[S], data any) {
	title := a.cfg.Pages[page].Title
	if e, ok := data.(ErrorPage); ok {
		title = e.Title
	}
	a.execute(w, status, a.pages[page], "layout.html", View[S]{Site: a.cfg.Site, Title: title, Session: s, Nav: page, Data: data})
}

// RenderFragment renders the fragment file alone, for htmx to swap in.
func (a *App[S]) RenderFragment(w http.ResponseWriter, status int, file string, s *Session[S], data any) {
	a.execute(w, status, a.fragments[file], file, View[S]{Site: a.cfg.Site, Session: s, Nav: file, Data: data})
}

func (a *App[S]) execute(w http.ResponseWriter, status int, t *template.Template, name string, v View[S]) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if t == nil {
		a.cfg.Logger.Error(a.cfg.Name+": no such template", "page", v.Nav)
		return
	}
	if err := t.ExecuteTemplate(w, name, v); err != nil {
		a.cfg.Logger.Warn(a.cfg.Name+": render page", "page", v.Nav, "error", err)
	}
}

// Fail renders err: a refusal the app knows with its status and message,
// anything else as 500 with a generic message (logged in full).
func (a *App[S]) Fail(w http.ResponseWriter, r *http.Request, s *Session[S], err error) {
	status, msg, ok := a.cfg.Refusal(err)
	if !ok {
		a.cfg.Logger.Error(a.cfg.Name+" request failed", "path", r.URL.Path, "error", err)
		status, msg = http.StatusInternalServerError, "Something went wrong; try again shortly (the worker's log says what)."
	}
	a.Render(w, status, "error", s, ErrorPage{Title: http.StatusText(status), Message: msg})
}

// Logger is the app's logger.
func (a *App[S]) Logger() *slog.Logger { return a.cfg.Logger }
