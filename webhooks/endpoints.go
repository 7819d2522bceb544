package webhooks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// Rules is what the webhook_endpoint.* commands take from the operator's
// configuration.
type Rules struct {
	// Secrets seals the signing secrets the commands store. Required.
	Secrets *Keyring
	// Targets decides which endpoint URLs are accepted: a host that is an
	// address (in any of the forms resolvers accept) must be one deliveries
	// may dial. Names are checked when they are dialled.
	Targets AddressPolicy
}

// Kinds returns the kind of the webhook_endpoint.* commands, so endpoint
// changes go through the same exactly-once pipeline as postings.
func Kinds(r Rules) []exec.Kind { return []exec.Kind{endpoints{now: time.Now, rules: r}} }

// endpoints executes webhook_endpoint.create, .update, .disable and
// .rotate_secret. An endpoint decides which deliveries the events after
// it fan out to, so the consumer gives this kind one command of a company
// at a time (exec.OnePerCompany).
type endpoints struct {
	now   func() time.Time
	rules Rules
}

func (endpoints) Commands() []string {
	return []string{new(ledger.CreateWebhookEndpoint).CommandName(), new(ledger.UpdateWebhookEndpoint).CommandName(), new(ledger.DisableWebhookEndpoint).CommandName(), new(ledger.RotateWebhookSecret).CommandName()}
}

func (endpoints) OnePerCompany() {}

func (k endpoints) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &endpointPlan{items: items, now: k.now, rules: k.rules, known: map[string]bool{}, rows: map[[2]string]*endpointRow{}}
	var companies, changed, ids []string
	for _, it := range items {
		companies = append(companies, it.Company)
		if id := endpointOf(it.Command); id != "" {
			changed, ids = append(changed, it.Company), append(ids, id)
		}
	}
	reads.Queue(`SELECT id FROM companies WHERE id = ANY($1)`, companies)
	reads.Queue(`
		SELECT e.company_id, e.id, e.url, e.description, e.event_types, e.secrets, e.status, e.disabled_reason, coalesce(e.rate_limit, 0)
		  FROM webhook_endpoints e
		  JOIN unnest($1::text[], $2::text[]) AS r(company_id, id) ON e.company_id = r.company_id AND e.id = nullif(r.id, '')::uuid
		 ORDER BY e.id
		   FOR UPDATE OF e`, changed, ids)
	return p
}

// endpointOf returns the endpoint a change names, in its canonical form,
// or "" for a create.
func endpointOf(cmd ledger.Command) string {
	var id string
	switch c := cmd.(type) {
	case *ledger.UpdateWebhookEndpoint:
		id = c.EndpointID
	case *ledger.DisableWebhookEndpoint:
		id = c.EndpointID
	case *ledger.RotateWebhookSecret:
		id = c.EndpointID
	default:
		return ""
	}
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}

type endpointPlan struct {
	items    []exec.Item
	now      func() time.Time
	rules    Rules
	known    map[string]bool
	rows     map[[2]string]*endpointRow // by (company, id)
	read     bool
	executed bool
}

func (p *endpointPlan) Read(br pgx.BatchResults) error {
	var id string
	rows, _ := br.Query()
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { p.known[id] = true; return nil }); err != nil {
		return fmt.Errorf("look up companies: %w", err)
	}
	var company string
	var e endpointRow
	var secrets []byte
	rows, _ = br.Query()
	_, err := pgx.ForEachRow(rows, []any{&company, &e.id, &e.url, &e.desc, &e.types, &secrets, &e.status, &e.reason, &e.rateLimit}, func() error {
		row := e
		row.company = company
		if err := json.Unmarshal(secrets, &row.secrets); err != nil {
			return fmt.Errorf("webhook endpoint %s secrets: %w", row.id, err)
		}
		p.rows[[2]string{company, row.id.String()}] = &row
		return nil
	})
	if err != nil {
		return fmt.Errorf("look up webhook endpoints: %w", err)
	}
	p.read = true
	return nil
}

func (p *endpointPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	if !p.read || p.executed {
		return nil, fmt.Errorf("webhooks: a plan executes once, after its reads were read")
	}
	p.executed = true
	results := make([]exec.Result, len(which))
	var created []newEndpoint
	var changed []*endpointRow
	for i, at := range which {
		company := p.items[at].Company
		var out ledger.Outcome
		var err *ledger.Error
		switch cmd := p.items[at].Command.(type) {
		case *ledger.CreateWebhookEndpoint:
			var n newEndpoint
			n, out, err = p.create(company, cmd)
			if err == nil {
				created = append(created, n)
			}
		default:
			e := p.rows[[2]string{company, endpointOf(cmd)}]
			if e == nil {
				id := endpointOf(cmd)
				err = ledger.Errorf(ledger.CodeNotFound, "webhook endpoint %s does not exist for company %q", id, company)
				err.Details = map[string]any{"endpoint_id": id}
				break
			}
			out, err = p.change(e, cmd)
			if err == nil {
				changed = append(changed, e)
			}
		}
		results[i] = exec.Result{Outcome: out, Err: err}
	}
	if err := queueEndpoints(w, created, changed); err != nil {
		return nil, err
	}
	return results, nil
}

// newEndpoint is an endpoint to insert.
type newEndpoint struct {
	company string
	row     endpointRow
}

func (p *endpointPlan) create(company string, cmd *ledger.CreateWebhookEndpoint) (newEndpoint, ledger.Outcome, *ledger.Error) {
	if !p.known[company] {
		e := ledger.Errorf(ledger.CodeUnknownCompany, "company %q does not exist; create it with company.create first", company)
		e.Details = map[string]any{"company": company}
		return newEndpoint{}, ledger.Outcome{}, e
	}
	if err := p.rules.Targets.checkURL("url", cmd.URL); err != nil {
		return newEndpoint{}, ledger.Outcome{}, err
	}
	sealed, generated, err := p.secret(company, cmd.SealedSecret)
	if err != nil {
		return newEndpoint{}, ledger.Outcome{}, err
	}
	types := cmd.EventTypes
	if types == nil {
		types = []string{}
	}
	n := newEndpoint{company: company, row: endpointRow{
		company: company, id: uuid.Must(uuid.NewV7()), url: cmd.URL, desc: cmd.Description, types: types,
		secrets: []storedSecret{{Sealed: sealed}}, status: "enabled",
	}}
	if cmd.RateLimit != nil {
		n.row.rateLimit = *cmd.RateLimit
	}
	p.rows[[2]string{company, n.row.id.String()}] = &n.row
	now := p.now()
	return n, shownOnce(n.row.view(now), generated, now), nil
}

// secret returns the sealed secret a create or a rotation stores: the one
// the command brought (sealed for transport), or a new one, which is also
// returned, to be shown once.
func (p *endpointPlan) secret(company, given string) (sealed, generated string, _ *ledger.Error) {
	keys := p.rules.Secrets
	if given == "" {
		_, generated, _ = NewSecret() // crypto/rand.Read does not fail
		return keys.Seal(company, generated), generated, nil
	}
	plain, err := keys.Open(company, given)
	if err != nil {
		return "", "", ledger.Errorf(ledger.CodeInvalidCommand, "sealed_secret: %v", err)
	}
	if _, err := ParseSecret(plain); err != nil {
		return "", "", ledger.Errorf(ledger.CodeInvalidCommand, "sealed_secret: %v", err)
	}
	return keys.Seal(company, plain), "", nil
}

// SecretNote is what a result says of a secret generated for it: the
// secret itself is in the first answer only.
const SecretNote = "The signing secret was returned once, in the first answer to this command, and is stored only encrypted; " +
	"if it was lost, make a new one with webhook_endpoint.rotate_secret."

// shownOnce is the outcome of a command that made view at now, with a
// generated secret in its first answer only. The stored result, which
// replays and lookups return, says when it was shown instead.
func shownOnce(view EndpointView, generated string, now time.Time) ledger.Outcome {
	if generated == "" {
		return ledger.Outcome{Result: view}
	}
	shown := now.UTC().Truncate(time.Microsecond) // as the inbox keeps times
	view.SecretNote, view.SecretShown = SecretNote, &shown
	first := view
	first.Secret = generated
	return ledger.Outcome{Result: view, Once: first}
}

// change applies an update, a disable or a rotation to e.
func (p *endpointPlan) change(e *endpointRow, cmd ledger.Command) (ledger.Outcome, *ledger.Error) {
	switch cmd := cmd.(type) {
	case *ledger.UpdateWebhookEndpoint:
		if cmd.URL != nil {
			if err := p.rules.Targets.checkURL("url", *cmd.URL); err != nil {
				return ledger.Outcome{}, err
			}
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
		if cmd.RateLimit != nil {
			e.rateLimit = *cmd.RateLimit
		}
		return ledger.Outcome{Result: e.view(p.now())}, nil
	case *ledger.DisableWebhookEndpoint:
		e.status, e.reason = "disabled", cmd.Reason
		if e.reason == "" {
			e.reason = "disabled by webhook_endpoint.disable"
		}
		v := e.view(p.now())
		return ledger.Outcome{Result: v, Events: []ledger.Event{{Type: ledger.EventWebhookEndpointDisabled, Data: v}}}, nil
	case *ledger.RotateWebhookSecret:
		sealed, generated, err := p.secret(e.company, cmd.SealedSecret)
		if err != nil {
			return ledger.Outcome{}, err
		}
		now := p.now().UTC()
		until := now.Add(cmd.Grace())
		kept := []storedSecret{{Sealed: sealed}}
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
		return shownOnce(e.view(now), generated, now), nil
	}
	return ledger.Outcome{}, ledger.Errorf(ledger.CodeInvalidCommand, "%s is not a webhook endpoint command", cmd.CommandName())
}

// queueEndpoints queues the inserts of created and the updates of changed
// endpoints, one statement each.
func queueEndpoints(w *pgx.Batch, created []newEndpoint, changed []*endpointRow) error {
	if len(created) > 0 {
		var ids [][16]byte
		var limits []int32
		var companies, urls, descs, types, secrets []string
		for _, n := range created {
			raw, err := json.Marshal(n.row.secrets)
			if err != nil {
				return err
			}
			t, err := json.Marshal(n.row.types)
			if err != nil {
				return err
			}
			ids, companies, urls, descs = append(ids, n.row.id), append(companies, n.company), append(urls, n.row.url), append(descs, n.row.desc)
			types, secrets, limits = append(types, string(t)), append(secrets, string(raw)), append(limits, int32(n.row.rateLimit))
		}
		w.Queue(`
			INSERT INTO webhook_endpoints (id, company_id, url, description, event_types, secrets, rate_limit)
			SELECT id, company_id, url, description, ARRAY(SELECT json_array_elements_text(types::json)), secrets::jsonb, nullif(rate_limit, 0)
			  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[])
			       AS t(id, company_id, url, description, types, secrets, rate_limit)`,
			ids, companies, urls, descs, types, secrets, limits)
	}
	if len(changed) > 0 {
		var ids [][16]byte
		var limits []int32
		var urls, descs, types, secrets, statuses, reasons []string
		for _, e := range changed {
			raw, err := json.Marshal(e.secrets)
			if err != nil {
				return err
			}
			t, err := json.Marshal(e.types)
			if err != nil {
				return err
			}
			ids, urls, descs, types = append(ids, e.id), append(urls, e.url), append(descs, e.desc), append(types, string(t))
			secrets, statuses, reasons = append(secrets, string(raw)), append(statuses, e.status), append(reasons, e.reason)
			limits = append(limits, int32(e.rateLimit))
		}
		w.Queue(`
			UPDATE webhook_endpoints e
			   SET url = u.url, description = u.description,
			       event_types = ARRAY(SELECT json_array_elements_text(u.types::json)),
			       secrets = u.secrets::jsonb, status = u.status, disabled_reason = u.reason,
			       failing_since = CASE WHEN u.status = 'enabled' AND e.status = 'disabled' THEN NULL ELSE e.failing_since END,
			       rate_limit = nullif(u.rate_limit, 0),
			       rate_tokens = CASE WHEN nullif(u.rate_limit, 0) IS DISTINCT FROM e.rate_limit THEN NULL ELSE e.rate_tokens END,
			       updated_at = now()
			  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[])
			       AS u(id, url, description, types, secrets, status, reason, rate_limit)
			 WHERE e.id = u.id`,
			ids, urls, descs, types, secrets, statuses, reasons, limits)
	}
	return nil
}

// storedSecret is one element of webhook_endpoints.secrets.
type storedSecret struct {
	// Sealed is the secret sealed with the keyring (see Keyring.Seal).
	Sealed string `json:"sealed,omitempty"`
	// Secret is a secret stored readable by an earlier release; SealStored
	// seals it.
	Secret    string     `json:"secret,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

func (s storedSecret) activeAt(now time.Time) bool {
	return s.ExpiresAt == nil || now.Before(*s.ExpiresAt)
}

// activeSecrets opens the secrets of company that sign at now, newest
// first.
func activeSecrets(keys *Keyring, company string, stored []storedSecret, now time.Time) ([]Secret, error) {
	var out []Secret
	for _, s := range stored {
		if !s.activeAt(now) {
			continue
		}
		plain := s.Secret
		if s.Sealed != "" {
			var err error
			if plain, err = keys.Open(company, s.Sealed); err != nil {
				return nil, err
			}
		}
		sec, err := ParseSecret(plain)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, nil
}

// EndpointView is an endpoint as results show it. Secret is filled only in
// the first answer to the command that generated it; its stored result,
// which replays and lookups return, has "secret": null, SecretShown (when
// it was returned) and SecretNote, as Stripe shows an API key once.
type EndpointView struct {
	EndpointID     string     `json:"endpoint_id"`
	URL            string     `json:"url"`
	Description    string     `json:"description"`
	EventTypes     []string   `json:"event_types"`
	Status         string     `json:"status"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
	Secret         string     `json:"secret,omitempty"`
	SecretShown    *time.Time `json:"secret_shown,omitempty"`
	SecretNote     string     `json:"secret_note,omitempty"`
	SecretsActive  int        `json:"secrets_active"`
	// RateLimit is the endpoint's bound on attempts per second, when it
	// has one.
	RateLimit *int `json:"rate_limit,omitempty"`
}

// MarshalJSON writes "secret": null in a result whose secret was shown
// before, so a client reading it sees the field is there and empty on
// purpose; results that never had a secret leave it out.
func (v EndpointView) MarshalJSON() ([]byte, error) {
	type plain EndpointView
	if v.SecretShown == nil || v.Secret != "" {
		return json.Marshal(plain(v))
	}
	return json.Marshal(struct {
		plain
		Secret *string `json:"secret"`
	}{plain: plain(v)})
}

// endpointRow is an endpoint locked for change.
type endpointRow struct {
	company        string
	id             uuid.UUID
	url, desc      string
	types          []string
	secrets        []storedSecret
	status, reason string
	rateLimit      int // attempts per second; 0: none
}

func (e *endpointRow) view(now time.Time) EndpointView {
	active := 0
	for _, s := range e.secrets {
		if s.activeAt(now) {
			active++
		}
	}
	v := EndpointView{
		EndpointID: e.id.String(), URL: e.url, Description: e.desc, EventTypes: e.types,
		Status: e.status, DisabledReason: e.reason, SecretsActive: active,
	}
	if e.rateLimit > 0 {
		limit := e.rateLimit
		v.RateLimit = &limit
	}
	return v
}
