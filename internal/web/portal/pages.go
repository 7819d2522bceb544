package portal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/internal/web"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
	"github.com/onceledger/onceledger/webhooks"
	"github.com/onceledger/onceledger/webhooks/catalogue"
)

var funcs = template.FuncMap{
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return "-"
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		case *time.Time:
			if v == nil {
				return "-"
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		}
		return "-"
	},
	"unix": func(t time.Time) int64 { return t.Unix() },
	"join": strings.Join,
	// pretty indents a JSON document, keeping its fields in their order.
	"pretty": func(s string) string {
		var out bytes.Buffer
		if json.Indent(&out, []byte(s), "", "  ") != nil {
			return s
		}
		return out.String()
	},
	"has": func(list []string, s string) bool {
		for _, v := range list {
			if v == s {
				return true
			}
		}
		return false
	},
}

// pageSize is how many deliveries a page lists.
const pageSize = 25

// newKey returns a form's action key: an Idempotency-Key for a command,
// or a portal_actions key.
func newKey() (string, error) { return web.NewActionKey() }

// signedIn starts a session of company and sends the browser to the
// endpoints.
func (p *Portal) signedIn(w http.ResponseWriter, r *http.Request, company string, by maker, byLink bool) {
	p.app.SignIn(w, r, member{Company: company, by: by}, "company", company, "by_link", byLink)
}

func (p *Portal) signin(w http.ResponseWriter, r *http.Request) {
	if !p.app.SigninChecked(w, r) {
		return
	}
	company, tokenID, err := p.apiToken(r.Context(), r.PostFormValue("token"))
	if errors.Is(err, errBadCredential) {
		p.app.SigninPage(w, r, http.StatusUnauthorized, "That is not a valid API token of a company.")
		return
	}
	if err != nil {
		p.app.Fail(w, r, nil, err)
		return
	}
	p.signedIn(w, r, company, maker{apiToken: tokenID}, false)
}

// linkForm answers the opening of a link with a button that uses it: a
// GET changes nothing, so a previewer fetching the link does not spend it.
func (p *Portal) linkForm(w http.ResponseWriter, r *http.Request) {
	csrf, err := p.app.SigninCSRF(w, r)
	if err != nil {
		p.app.Fail(w, r, nil, err)
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	p.app.Render(w, http.StatusOK, "link", nil, struct{ CSRF, Token string }{csrf, r.URL.Query().Get("token")})
}

func (p *Portal) openLink(w http.ResponseWriter, r *http.Request) {
	if !p.app.SigninChecked(w, r) {
		return
	}
	company, by, err := p.useLink(r.Context(), r.PostFormValue("token"))
	if errors.Is(err, errBadCredential) {
		p.app.Render(w, http.StatusUnauthorized, "error", nil, web.ErrorPage{Title: "Unauthorized", Message: "This portal link is unknown, expired or already used: ask for a new one."})
		return
	}
	if errors.Is(err, errRevokedMaker) {
		p.app.Render(w, http.StatusUnauthorized, "error", nil, web.ErrorPage{Title: "Unauthorized", Message: "The token this portal link was made with has been revoked: ask for a new link."})
		return
	}
	if err != nil {
		p.app.Fail(w, r, nil, err)
		return
	}
	p.signedIn(w, r, company, by, true)
}

func (p *Portal) endpoints(w http.ResponseWriter, r *http.Request, s *session) {
	list, err := endpointsOf(r.Context(), p.cfg.Pool, s.Who.Company, uuid.Nil)
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	key, err := newKey()
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	p.app.Render(w, http.StatusOK, "endpoints", s, struct {
		Endpoints  []endpoint
		Action     string
		EventTypes []string
	}{list, key, ledger.EventTypes})
}

// forms holds one action key per form of the endpoint page.
type forms struct {
	Update, Disable, Enable, Rotate, Test, ReplayFailed, Replay string
}

func newForms() (forms, error) {
	var f forms
	for _, k := range []*string{&f.Update, &f.Disable, &f.Enable, &f.Rotate, &f.Test, &f.ReplayFailed, &f.Replay} {
		v, err := newKey()
		if err != nil {
			return f, err
		}
		*k = v
	}
	return f, nil
}

func (p *Portal) endpoint(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := findEndpoint(r.Context(), p.cfg.Pool, s.Who.Company, r.PathValue("endpoint"))
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	q := r.URL.Query()
	dq := deliveryQuery{EventType: q.Get("event_type"), Status: q.Get("status"), After: q.Get("after"), Limit: pageSize}
	id, _ := uuid.Parse(e.EndpointID)
	list, next, err := deliveriesOf(r.Context(), p.cfg.Pool, s.Who.Company, id, dq)
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	if next != "" {
		v := r.URL.Query()
		v.Set("after", next)
		next = basePath + "/endpoints/" + e.EndpointID + "?" + v.Encode()
	}
	f, err := newForms()
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	p.app.Render(w, http.StatusOK, "endpoint", s, struct {
		Endpoint   endpoint
		Query      deliveryQuery
		Deliveries []webhooks.Delivery
		Next       string
		Forms      forms
		EventTypes []string
		Statuses   []string
		Since      string
	}{e, dq, list, next, f, ledger.EventTypes, statuses, time.Now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04")})
}

func (p *Portal) delivery(w http.ResponseWriter, r *http.Request, s *session) {
	e, err := findEndpoint(r.Context(), p.cfg.Pool, s.Who.Company, r.PathValue("endpoint"))
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	id, _ := uuid.Parse(e.EndpointID)
	d, err := findDelivery(r.Context(), p.cfg.Pool, s.Who.Company, id, r.PathValue("delivery"))
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	log, err := webhooks.Attempts(r.Context(), p.cfg.Pool, d.ID)
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	key, err := newKey()
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	// While the endpoint's breaker is open no attempt goes before it lets
	// a probe through, whatever the delivery's own schedule says.
	next, held := d.NextAttemptAt, false
	if next != nil && e.BreakerUntil != nil && e.BreakerUntil.After(*next) && e.BreakerUntil.After(time.Now()) {
		next, held = e.BreakerUntil, true
	}
	p.app.Render(w, http.StatusOK, "delivery", s, struct {
		Endpoint      endpoint
		Delivery      deliveryDetail
		Attempts      []webhooks.Attempt
		Action        string
		NextAttempt   *time.Time
		HeldByBreaker bool
	}{e, d, log, key, next, held})
}

// outcome is what a change's answer shows.
type outcome struct {
	Message  string
	Error    bool
	Replayed bool
	// Secret is a generated signing secret, in the first answer only.
	Secret     string
	SecretNote string
	Back       string
}

// command sends a webhook_endpoint.* command of s's company under the
// form's action key and shows its result. Submitting the same form again
// sends the same key, and the pipeline answers with the stored result.
func (p *Portal) command(w http.ResponseWriter, r *http.Request, s *session, command string, body any, back, done string) {
	key := r.PostFormValue("action")
	if len(key) < 16 || len(key) > 64 {
		p.app.Fail(w, r, s, invalid("The form carries no action key: reload it."))
		return
	}
	raw, err := json.Marshal(body)
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	// The command is sent whatever the browser does meanwhile; a
	// resubmission with the same key gets its result.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), p.cfg.CommandTimeout)
	defer cancel()
	res, err := p.cfg.Client.Publish(ctx, s.Who.Company, command, "portal-"+key, raw)
	if err != nil {
		p.cfg.Logger.Warn("portal command unanswered", "company", s.Who.Company, "command", command, "error", err)
		p.app.Fail(w, r, s, &problem{http.StatusServiceUnavailable, "The change was sent but its result did not come in time. Submit the form again: it is applied once whatever happens."})
		return
	}
	p.cfg.Logger.Info("portal change", "company", s.Who.Company, "command", command, "status", res.Status, "replayed", res.Replayed)
	o := outcome{Back: back, Replayed: res.Replayed}
	if o.Back == "" {
		o.Back = basePath + "/"
	}
	status := http.StatusOK
	if res.Status != protocol.StatusOK || res.Error != nil {
		o.Error, status = true, http.StatusUnprocessableEntity
		o.Message = "Refused: the command failed."
		if res.Error != nil {
			o.Message = "Refused: " + res.Error.Message
			if res.Error.Code == ledger.CodeNotFound {
				status = http.StatusNotFound
			}
		}
		p.app.Render(w, status, "outcome", s, o)
		return
	}
	var v webhooks.EndpointView
	if err := json.Unmarshal(res.Result, &v); err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	o.Message, o.Secret, o.SecretNote = done, v.Secret, v.SecretNote
	if back == "" && v.EndpointID != "" {
		o.Back = basePath + "/endpoints/" + v.EndpointID
	}
	p.app.Render(w, status, "outcome", s, o)
}

// eventTypes reads the form's chosen event types; none means all.
func eventTypes(r *http.Request) []string {
	if err := r.ParseForm(); err != nil {
		return nil
	}
	return r.PostForm["event_types"]
}

func (p *Portal) createEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	cmd := ledger.CreateWebhookEndpoint{URL: strings.TrimSpace(r.PostFormValue("url")), Description: r.PostFormValue("description"), EventTypes: eventTypes(r)}
	if v := strings.TrimSpace(r.PostFormValue("rate_limit")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			p.app.Fail(w, r, s, invalid("The rate limit is a whole number of attempts per second."))
			return
		}
		cmd.RateLimit = &n
	}
	p.command(w, r, s, cmd.CommandName(), cmd, "", "The endpoint is created.")
}

// changed checks that the endpoint in the path is s's company's, and
// returns its ID and page.
func (p *Portal) changed(w http.ResponseWriter, r *http.Request, s *session) (endpoint, string, bool) {
	e, err := findEndpoint(r.Context(), p.cfg.Pool, s.Who.Company, r.PathValue("endpoint"))
	if err != nil {
		p.app.Fail(w, r, s, err)
		return endpoint{}, "", false
	}
	return e, basePath + "/endpoints/" + e.EndpointID, true
}

func (p *Portal) updateEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	url, desc, types := strings.TrimSpace(r.PostFormValue("url")), r.PostFormValue("description"), eventTypes(r)
	if types == nil {
		types = []string{}
	}
	cmd := ledger.UpdateWebhookEndpoint{EndpointID: e.EndpointID, URL: &url, Description: &desc, EventTypes: &types}
	v := strings.TrimSpace(r.PostFormValue("rate_limit"))
	if v == "" {
		v = "0"
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		p.app.Fail(w, r, s, invalid("The rate limit is a whole number of attempts per second."))
		return
	}
	cmd.RateLimit = &n
	p.command(w, r, s, cmd.CommandName(), cmd, back, "The endpoint is updated.")
}

func (p *Portal) disableEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if reason == "" {
		reason = "disabled in the webhook portal"
	}
	cmd := ledger.DisableWebhookEndpoint{EndpointID: e.EndpointID, Reason: reason}
	p.command(w, r, s, cmd.CommandName(), cmd, back, "The endpoint is disabled: no new deliveries are made to it.")
}

func (p *Portal) enableEndpoint(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	cmd := ledger.UpdateWebhookEndpoint{EndpointID: e.EndpointID, Enable: true}
	p.command(w, r, s, cmd.CommandName(), cmd, back, "The endpoint is enabled.")
}

func (p *Portal) rotateSecret(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	cmd := ledger.RotateWebhookSecret{EndpointID: e.EndpointID}
	p.command(w, r, s, cmd.CommandName(), cmd, back,
		"The secret is rotated. The previous secret keeps signing beside the new one for 24 hours, so receivers can switch at their own pace.")
}

// once runs act once per form (web.App.Once) and sends the browser to
// its outcome, with back to return to.
func (p *Portal) once(w http.ResponseWriter, r *http.Request, s *session, back string, act func(ctx context.Context) (string, error)) {
	if key, ok := p.app.Once(w, r, s, s.Who.Company, act); ok {
		http.Redirect(w, r, basePath+"/actions/"+key+"?back="+back, http.StatusSeeOther)
	}
}

func (p *Portal) action(w http.ResponseWriter, r *http.Request, s *session) {
	out, err := p.app.Outcome(r.Context(), s.Who.Company, r.PathValue("key"))
	if errors.Is(err, web.ErrNoAction) {
		p.app.Fail(w, r, s, notFound("No such action of this company (actions are kept for a day)."))
		return
	}
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	o := outcome{Message: "Still running: reload in a moment.", Back: basePath + "/"}
	if out != nil {
		o.Message, o.Error = *out, strings.HasPrefix(*out, "Refused") || strings.HasPrefix(*out, "Failed")
	}
	// Only a path of the portal's own is followed back.
	if b := r.URL.Query().Get("back"); strings.HasPrefix(b, basePath+"/endpoints/") && !strings.ContainsAny(b, "\\?#") {
		o.Back = b
	}
	p.app.Render(w, http.StatusOK, "outcome", s, o)
}

func (p *Portal) sendTest(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	id, _ := uuid.Parse(e.EndpointID)
	exampleOf := r.PostFormValue("example_of")
	var example json.RawMessage
	if exampleOf != "" {
		var err error
		if example, err = catalogue.ExampleData(exampleOf); err != nil {
			p.app.Fail(w, r, s, invalid("There is no example of "+exampleOf+"; choose one of the event catalogue's types."))
			return
		}
	}
	p.once(w, r, s, back, func(ctx context.Context) (string, error) {
		d, err := webhooks.SendTestOf(ctx, p.cfg.Pool, s.Who.Company, id, exampleOf, example)
		var limited *webhooks.TestLimitError
		switch {
		case errors.Is(err, webhooks.ErrEndpointNotFound):
			return "", notFound("There is no such endpoint.")
		case errors.Is(err, webhooks.ErrEndpointDisabled):
			return "", &problem{http.StatusConflict, "The endpoint is disabled: enable it to test it."}
		case errors.As(err, &limited):
			return "", &problem{http.StatusTooManyRequests, fmt.Sprintf("The endpoint was sent %d test events in the last %s: send the next in %s.",
				webhooks.TestsPerWindow, webhooks.TestWindow, limited.RetryAfter)}
		case err != nil:
			return "", err
		}
		with := ""
		if exampleOf != "" {
			with = ", with an example of " + exampleOf + " in data.example,"
		}
		return "A " + webhooks.EventTest + " event " + d.EventID.String() + with + " is on its way to the endpoint (delivery " + d.ID.String() + ").", nil
	})
}

func (p *Portal) replayDelivery(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	id, _ := uuid.Parse(e.EndpointID)
	d, err := findDelivery(r.Context(), p.cfg.Pool, s.Who.Company, id, r.PathValue("delivery"))
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	p.once(w, r, s, back, func(ctx context.Context) (string, error) {
		if err := webhooks.ReplayDelivery(ctx, p.cfg.Pool, d.ID); err != nil {
			if errors.Is(err, webhooks.ErrDeliveryBusy) {
				return "", &problem{http.StatusConflict, err.Error()}
			}
			return "", err
		}
		return "Delivery " + d.ID.String() + " is due again now.", nil
	})
}

func (p *Portal) replayFailed(w http.ResponseWriter, r *http.Request, s *session) {
	e, back, ok := p.changed(w, r, s)
	if !ok {
		return
	}
	since, err := time.Parse("2006-01-02T15:04", r.PostFormValue("since"))
	if err != nil {
		p.app.Fail(w, r, s, invalid("since is a time, YYYY-MM-DDTHH:MM (UTC)."))
		return
	}
	id, _ := uuid.Parse(e.EndpointID)
	p.once(w, r, s, back, func(ctx context.Context) (string, error) {
		n, err := webhooks.ReplayFailed(ctx, p.cfg.Pool, id, since)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n, 10) + " failed deliveries since " + since.Format("2006-01-02 15:04Z") + " are due again now.", nil
	})
}

func (p *Portal) events(w http.ResponseWriter, r *http.Request, s *session) {
	list, err := catalogue.Catalogue()
	if err != nil {
		p.app.Fail(w, r, s, err)
		return
	}
	p.app.Render(w, http.StatusOK, "events", s, list)
}
