package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
)

// Executor applies a command in the caller's transaction; it is the
// consumer's executor interface, restated here so the two packages do not
// depend on each other.
type Executor interface {
	Execute(ctx context.Context, tx pgx.Tx, company string, cmd ledger.Command) (ledger.Outcome, error)
}

// Commands executes the webhook_endpoint.* commands and hands every other
// command to the executor it wraps, so endpoint changes go through the same
// exactly-once pipeline as postings.
type Commands struct {
	next Executor
	now  func() time.Time
}

// NewCommands wraps next.
func NewCommands(next Executor) *Commands { return &Commands{next: next, now: time.Now} }

// Execute implements Executor.
func (c *Commands) Execute(ctx context.Context, tx pgx.Tx, company string, cmd ledger.Command) (ledger.Outcome, error) {
	switch cmd := cmd.(type) {
	case *ledger.CreateWebhookEndpoint:
		return c.create(ctx, tx, company, cmd)
	case *ledger.UpdateWebhookEndpoint:
		return c.update(ctx, tx, company, cmd)
	case *ledger.DisableWebhookEndpoint:
		return c.disable(ctx, tx, company, cmd)
	case *ledger.RotateWebhookSecret:
		return c.rotate(ctx, tx, company, cmd)
	}
	return c.next.Execute(ctx, tx, company, cmd)
}

// batchPlan is the consumer's BatchPlan (an alias of the same unnamed
// interface).
type batchPlan = interface {
	Read(br pgx.BatchResults) error
	Execute(which []int, writes *pgx.Batch) ([]ledger.BatchResult, error)
}

// batchExecutor is the consumer's BatchExecutor without Execute.
type batchExecutor interface {
	Batchable(cmd ledger.Command) bool
	PrepareBatch(items []ledger.BatchItem, reads *pgx.Batch) batchPlan
}

// Batchable reports whether the wrapped executor executes cmd in batches
// (see the consumer's BatchExecutor); endpoint commands never are.
func (c *Commands) Batchable(cmd ledger.Command) bool {
	b, ok := c.next.(batchExecutor)
	return ok && b.Batchable(cmd)
}

// PrepareBatch hands a batch of Batchable commands to the wrapped executor.
func (c *Commands) PrepareBatch(items []ledger.BatchItem, reads *pgx.Batch) batchPlan {
	b, ok := c.next.(batchExecutor)
	if !ok {
		return unbatchable{}
	}
	return b.PrepareBatch(items, reads)
}

// unbatchable is the plan of a batch the wrapped executor cannot execute;
// Batchable never lets one through.
type unbatchable struct{}

func (unbatchable) Read(pgx.BatchResults) error { return nil }
func (unbatchable) Execute([]int, *pgx.Batch) ([]ledger.BatchResult, error) {
	return nil, errors.New("webhooks: the wrapped executor does not execute batches")
}

// storedSecret is one element of webhook_endpoints.secrets.
type storedSecret struct {
	Secret    string     `json:"secret"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// active returns the secrets that sign at now, newest first.
func activeSecrets(stored []storedSecret, now time.Time) ([]Secret, error) {
	var out []Secret
	for _, s := range stored {
		if s.ExpiresAt != nil && !now.Before(*s.ExpiresAt) {
			continue
		}
		sec, err := ParseSecret(s.Secret)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, nil
}

// EndpointView is an endpoint as results show it. Secret is filled only in
// the result of the command that set it.
type EndpointView struct {
	EndpointID     string   `json:"endpoint_id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	EventTypes     []string `json:"event_types"`
	Status         string   `json:"status"`
	DisabledReason string   `json:"disabled_reason,omitempty"`
	Secret         string   `json:"secret,omitempty"`
	SecretsActive  int      `json:"secrets_active"`
}

func companyExists(ctx context.Context, tx pgx.Tx, company string) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM companies WHERE id = $1)`, company).Scan(&ok); err != nil {
		return fmt.Errorf("look up company: %w", err)
	}
	if !ok {
		return ledger.Errorf(ledger.CodeUnknownCompany, "company %q does not exist; create it with company.create first", company)
	}
	return nil
}

func secretOrNew(given string) (string, error) {
	if given != "" {
		if _, err := ParseSecret(given); err != nil {
			return "", err
		}
		return given, nil
	}
	_, s, err := NewSecret()
	return s, err
}

func (c *Commands) create(ctx context.Context, tx pgx.Tx, company string, cmd *ledger.CreateWebhookEndpoint) (ledger.Outcome, error) {
	if err := companyExists(ctx, tx, company); err != nil {
		return ledger.Outcome{}, err
	}
	secret, err := secretOrNew(cmd.Secret)
	if err != nil {
		return ledger.Outcome{}, err
	}
	secrets, _ := json.Marshal([]storedSecret{{Secret: secret}})
	types := cmd.EventTypes
	if types == nil {
		types = []string{}
	}
	id := uuid.Must(uuid.NewV7())
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_endpoints (id, company_id, url, description, event_types, secrets)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, company, cmd.URL, cmd.Description, types, string(secrets)); err != nil {
		return ledger.Outcome{}, fmt.Errorf("insert webhook endpoint: %w", err)
	}
	return ledger.Outcome{Result: EndpointView{
		EndpointID: id.String(), URL: cmd.URL, Description: cmd.Description, EventTypes: types,
		Status: "enabled", Secret: secret, SecretsActive: 1,
	}}, nil
}

// endpointRow is an endpoint locked for change.
type endpointRow struct {
	id             uuid.UUID
	url, desc      string
	types          []string
	secrets        []storedSecret
	status, reason string
}

func lockEndpoint(ctx context.Context, tx pgx.Tx, company, id string) (*endpointRow, error) {
	var e endpointRow
	var secrets []byte
	err := tx.QueryRow(ctx, `
		SELECT id, url, description, event_types, secrets, status, disabled_reason
		  FROM webhook_endpoints WHERE company_id = $1 AND id = $2 FOR UPDATE`, company, id).
		Scan(&e.id, &e.url, &e.desc, &e.types, &secrets, &e.status, &e.reason)
	if errors.Is(err, pgx.ErrNoRows) {
		le := ledger.Errorf(ledger.CodeNotFound, "webhook endpoint %s does not exist for company %q", id, company)
		le.Details = map[string]any{"endpoint_id": id}
		return nil, le
	}
	if err != nil {
		return nil, fmt.Errorf("look up webhook endpoint: %w", err)
	}
	if err := json.Unmarshal(secrets, &e.secrets); err != nil {
		return nil, fmt.Errorf("webhook endpoint %s secrets: %w", id, err)
	}
	return &e, nil
}

func (e *endpointRow) view(now time.Time) EndpointView {
	active, _ := activeSecrets(e.secrets, now)
	return EndpointView{
		EndpointID: e.id.String(), URL: e.url, Description: e.desc, EventTypes: e.types,
		Status: e.status, DisabledReason: e.reason, SecretsActive: len(active),
	}
}

func (c *Commands) save(ctx context.Context, tx pgx.Tx, e *endpointRow) error {
	secrets, err := json.Marshal(e.secrets)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `
		UPDATE webhook_endpoints
		   SET url = $2, description = $3, event_types = $4, secrets = $5, status = $6, disabled_reason = $7,
		       failing_since = CASE WHEN $6 = 'enabled' AND status = 'disabled' THEN NULL ELSE failing_since END,
		       updated_at = now()
		 WHERE id = $1`, e.id, e.url, e.desc, e.types, string(secrets), e.status, e.reason)
	if err != nil {
		return fmt.Errorf("update webhook endpoint: %w", err)
	}
	return nil
}

func (c *Commands) update(ctx context.Context, tx pgx.Tx, company string, cmd *ledger.UpdateWebhookEndpoint) (ledger.Outcome, error) {
	e, err := lockEndpoint(ctx, tx, company, cmd.EndpointID)
	if err != nil {
		return ledger.Outcome{}, err
	}
	if cmd.URL != nil {
		e.url = *cmd.URL
	}
	if cmd.Description != nil {
		e.desc = *cmd.Description
	}
	if cmd.EventTypes != nil {
		e.types = append([]string{}, *cmd.EventTypes...)
	}
	if cmd.Enable {
		e.status, e.reason = "enabled", ""
	}
	if err := c.save(ctx, tx, e); err != nil {
		return ledger.Outcome{}, err
	}
	return ledger.Outcome{Result: e.view(c.now())}, nil
}

func (c *Commands) disable(ctx context.Context, tx pgx.Tx, company string, cmd *ledger.DisableWebhookEndpoint) (ledger.Outcome, error) {
	e, err := lockEndpoint(ctx, tx, company, cmd.EndpointID)
	if err != nil {
		return ledger.Outcome{}, err
	}
	e.status, e.reason = "disabled", cmd.Reason
	if e.reason == "" {
		e.reason = "disabled by webhook_endpoint.disable"
	}
	if err := c.save(ctx, tx, e); err != nil {
		return ledger.Outcome{}, err
	}
	v := e.view(c.now())
	return ledger.Outcome{Result: v, Events: []ledger.Event{{Type: "webhook_endpoint.disabled", Data: v}}}, nil
}

func (c *Commands) rotate(ctx context.Context, tx pgx.Tx, company string, cmd *ledger.RotateWebhookSecret) (ledger.Outcome, error) {
	e, err := lockEndpoint(ctx, tx, company, cmd.EndpointID)
	if err != nil {
		return ledger.Outcome{}, err
	}
	secret, err := secretOrNew(cmd.Secret)
	if err != nil {
		return ledger.Outcome{}, err
	}
	now := c.now().UTC()
	until := now.Add(cmd.Grace())
	kept := []storedSecret{{Secret: secret}}
	for _, s := range e.secrets {
		if s.ExpiresAt != nil && !now.Before(*s.ExpiresAt) {
			continue // already past its grace period
		}
		if s.ExpiresAt == nil || s.ExpiresAt.After(until) {
			s.ExpiresAt = &until
		}
		kept = append(kept, s)
	}
	e.secrets = kept
	if err := c.save(ctx, tx, e); err != nil {
		return ledger.Outcome{}, err
	}
	v := e.view(now)
	v.Secret = secret
	return ledger.Outcome{Result: v}, nil
}
