package console

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/google/uuid"
	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/internal/web"
)

// basePath is where the console is mounted.
const basePath = "/console"

//go:embed templates/*.html
var templateFiles embed.FS

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
	cfg Config
	app *web.App[operator]
	dlq ops.DeadLetters
}

// operator is who a console session is: the operator token it signed in
// with.
type operator struct {
	TokenID   uuid.UUID
	TokenName string
}

// session is a signed-in operator.
type session = web.Session[operator]

// New returns the console of cfg. Mount it at /console/.
func New(cfg Config) (*Console, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	templates, _ := fs.Sub(templateFiles, "templates")
	app, err := web.New(web.Config[operator]{
		Site: web.Site{Name: "console", Base: basePath, Title: "onceledger console", Brand: "onceledger",
			Home: "Back to the overview", TokenLabel: "Operator token"},
		Pool:      cfg.Pool,
		Templates: templates,
		Pages: map[string]web.Page{
			"overview": {Title: "Overview", Files: []string{"overview.html", "stats.html"}},
			"commands": {Title: "Commands"}, "deadletters": {Title: "Dead letters"}, "deadletter": {Title: "Dead letter"},
			"action": {Title: "Outcome"}, "webhooks": {Title: "Webhook deliveries"}, "books": {Title: "Books"},
		},
		// The overview's figures are also served alone, for it to refresh
		// them.
		Fragments:  []string{"stats.html"},
		Funcs:      funcs,
		Sessions:   sessions,
		Actions:    web.Actions{Table: "console_actions", Owner: "token_id"},
		SessionTTL: cfg.SessionTTL,
		Refusal:    refusal,
		Logger:     cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, app: app, dlq: ops.DeadLetters{JS: cfg.JS, DB: cfg.Pool, Stream: cfg.DeadLetterStream}}
	app.Public("POST "+basePath+"/signin", http.HandlerFunc(c.signin))
	app.Private("GET "+basePath+"/{$}", c.overview)
	app.Private("GET "+basePath+"/stats", c.stats)
	app.Private("POST "+basePath+"/audit", c.runAudit)
	app.Private("GET "+basePath+"/commands", c.commands)
	app.Private("GET "+basePath+"/dead-letters", c.deadLetters)
	app.Private("GET "+basePath+"/dead-letters/{seq}", c.deadLetter)
	app.Private("POST "+basePath+"/dead-letters/{seq}/replay", c.replayDeadLetter)
	app.Private("POST "+basePath+"/dead-letters/{seq}/close", c.closeDeadLetter)
	app.Private("POST "+basePath+"/dead-letters/replay", c.replaySelected)
	app.Private("GET "+basePath+"/actions/{key}", c.action)
	app.Private("GET "+basePath+"/webhooks", c.webhooks)
	app.Private("POST "+basePath+"/webhooks/replay", c.replayDelivery)
	app.Private("GET "+basePath+"/books", c.books)
	app.Private("GET "+basePath+"/books/register", c.register)
	return c, nil
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.app.ServeHTTP(w, r) }

// refusal maps an ops refusal to its status and message.
func refusal(err error) (int, string, bool) {
	switch ops.ErrorCode(err) {
	case ops.CodeNotFound:
		return http.StatusNotFound, err.Error(), true
	case ops.CodeInvalid:
		return http.StatusBadRequest, err.Error(), true
	case ops.CodeConflict:
		return http.StatusConflict, err.Error(), true
	}
	return 0, "", false
}
