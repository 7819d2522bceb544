package portal

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/internal/web"
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
	cfg Config
	app *web.App[member]
}

// New returns the portal of cfg. Mount it at /portal/.
func New(cfg Config) (*Portal, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	templates, _ := fs.Sub(templateFiles, "templates")
	app, err := web.New(web.Config[member]{
		Site: web.Site{Name: "portal", Base: basePath, Title: "onceledger webhook portal", Brand: "onceledger webhooks",
			Home: "Back to the endpoints", TokenLabel: "API token", Stylesheets: []string{"assets/portal.css"}},
		Pool:      cfg.Pool,
		Templates: templates,
		Pages: map[string]web.Page{
			"link": {Title: "Open the portal"}, "endpoints": {Title: "Webhook endpoints"}, "endpoint": {Title: "Endpoint"},
			"delivery": {Title: "Delivery"}, "outcome": {Title: "Outcome"}, "events": {Title: "Event catalogue"},
		},
		Funcs:      funcs,
		Sessions:   sessions,
		Actions:    web.Actions{Table: "portal_actions", Owner: "company_id"},
		SessionTTL: cfg.SessionTTL,
		Refusal: func(err error) (int, string, bool) {
			var pr *problem
			if errors.As(err, &pr) {
				return pr.status, pr.msg, true
			}
			return 0, "", false
		},
		Outcome: func(err error) string {
			var pr *problem
			if errors.As(err, &pr) {
				return "Refused: " + pr.msg
			}
			return "Failed: something went wrong; try again shortly."
		},
		Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	p := &Portal{cfg: cfg, app: app}
	assets, _ := fs.Sub(assetFiles, "assets")
	app.Public("GET "+basePath+"/assets/", http.StripPrefix(basePath+"/assets/", http.FileServerFS(assets)))
	app.Public("POST "+basePath+"/signin", http.HandlerFunc(p.signin))
	app.Public("GET "+basePath+"/link", http.HandlerFunc(p.linkForm))
	app.Public("POST "+basePath+"/link", http.HandlerFunc(p.openLink))
	app.Private("GET "+basePath+"/{$}", p.endpoints)
	app.Private("POST "+basePath+"/endpoints", p.createEndpoint)
	app.Private("GET "+basePath+"/endpoints/{endpoint}", p.endpoint)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/update", p.updateEndpoint)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/disable", p.disableEndpoint)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/enable", p.enableEndpoint)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/rotate", p.rotateSecret)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/test", p.sendTest)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/replay-failed", p.replayFailed)
	app.Private("GET "+basePath+"/endpoints/{endpoint}/deliveries/{delivery}", p.delivery)
	app.Private("POST "+basePath+"/endpoints/{endpoint}/deliveries/{delivery}/replay", p.replayDelivery)
	app.Private("GET "+basePath+"/actions/{key}", p.action)
	app.Private("GET "+basePath+"/events", p.events)
	return p, nil
}

func (p *Portal) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.app.ServeHTTP(w, r) }

// problem is a refusal the portal shows with its status and message.
type problem struct {
	status int
	msg    string
}

func (e *problem) Error() string { return e.msg }

func notFound(what string) error { return &problem{http.StatusNotFound, what} }

func invalid(msg string) error { return &problem{http.StatusBadRequest, msg} }
