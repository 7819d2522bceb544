package console

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/consumer/streams"
	"github.com/onceledger/onceledger/internal/audit"
	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/internal/web"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/webhooks"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"pretty": prettyJSON,
	"redact": redactURL,
	"duration": func(from, to time.Time) string {
		return to.Sub(from).Round(time.Millisecond).String()
	},
	"deref": func(p *int64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatInt(*p, 10)
	},
}

// prettyJSON indents a JSON document with its secrets masked; what is not
// JSON is shown as it is.
func prettyJSON(raw any) string {
	var b []byte
	switch v := raw.(type) {
	case json.RawMessage:
		b = v
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		out, _ := json.MarshalIndent(v, "", "  ")
		return string(out)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return string(b)
	}
	out, _ := json.MarshalIndent(mask(doc), "", "  ")
	return string(out)
}

// secretName says whether a field or header of that name holds a secret.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"secret", "password", "token", "authorization"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// maskHeaders returns h with the values of secretName headers hidden.
func maskHeaders(h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		if secretName(k) {
			v = []string{"(hidden)"}
		}
		out[k] = v
	}
	return out
}

// mask replaces the values of fields whose names say they hold a secret.
func mask(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if secretName(k) {
				v[k] = "(hidden)"
				continue
			}
			v[k] = mask(x)
		}
	case []any:
		for i := range v {
			v[i] = mask(v[i])
		}
	}
	return v
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if !c.app.SigninChecked(w, r) {
		return
	}
	tok, err := authenticate(r.Context(), c.cfg.Pool, r.PostFormValue("token"))
	if errors.Is(err, errBadToken) {
		c.app.SigninPage(w, r, http.StatusUnauthorized, "That is not a valid operator token (onceledger tokens create -operator makes one).")
		return
	}
	if err != nil {
		c.app.Fail(w, r, nil, err)
		return
	}
	c.app.SignIn(w, r, operator{TokenID: tok.ID, TokenName: tok.Name}, "token_id", tok.ID, "token_name", tok.Name)
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	action, err := web.NewActionKey()
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	c.app.Render(w, http.StatusOK, "overview", s, struct {
		Figures        figures
		Action         string
		RefreshMillis  int64
		RefreshSeconds string
	}{c.readFigures(r.Context()), action, c.cfg.RefreshEvery.Milliseconds(), strconv.FormatFloat(c.cfg.RefreshEvery.Seconds(), 'f', -1, 64)})
}

func (c *Console) stats(w http.ResponseWriter, r *http.Request, s *session) {
	c.app.RenderFragment(w, http.StatusOK, "stats.html", s, c.readFigures(r.Context()))
}

// figures are what the overview shows and refreshes: the counts, and the
// last audit run.
type figures struct {
	Stats []stat
	Audit auditView
}

// auditView is the last recorded audit run, or why there is none.
type auditView struct {
	Run   *audit.StoredRun
	Age   string
	Error string
}

func (c *Console) readFigures(ctx context.Context) figures {
	f := figures{Stats: c.readStats(ctx)}
	run, err := ops.LastAudit(ctx, c.cfg.Pool)
	switch {
	case err != nil:
		c.cfg.Logger.Warn("console: read the last audit", "error", err)
		f.Audit.Error = "unavailable"
	case run != nil:
		f.Audit = auditView{Run: run, Age: age(time.Since(run.FinishedAt))}
	}
	return f
}

// age says how long ago something was, to the largest whole unit.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min ago"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h ago"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days ago"
}

// runAudit audits every company, as onceledger audit does, and records
// the run under the operator's name.
func (c *Console) runAudit(w http.ResponseWriter, r *http.Request, s *session) {
	c.once(w, r, s, func(ctx context.Context) (string, error) {
		report, err := ops.RunAudit(ctx, c.cfg.Pool, audit.Options{}, "console: "+s.Who.TokenName)
		if err != nil {
			return "", err
		}
		if report.OK() {
			return "audit passed: no violations in " + strconv.Itoa(len(report.Checks)) + " checks", nil
		}
		var failed []string
		var n int64
		for _, ch := range report.Checks {
			if ch.Violations > 0 {
				failed = append(failed, ch.Name+" ("+strconv.FormatInt(ch.Violations, 10)+")")
				n += ch.Violations
			}
		}
		return "audit failed: " + strconv.FormatInt(n, 10) + " violations in " + strings.Join(failed, ", ") +
			"; onceledger audit lists them", nil
	})
}

// stat is one figure of the overview: its value, or why it is missing.
type stat struct {
	Label, Value, Note, Error string
	// Link is the page the figure's things are listed on, if any.
	Link string
}

// statLinks are the pages each figure of the overview leads to.
var statLinks = map[string]string{
	"Commands/s":      basePath + "/commands",
	"Command backlog": basePath + "/commands",
	"Failed webhooks": basePath + "/webhooks",
	"Dead letters":    basePath + "/dead-letters",
}

// readStats reads the overview's figures, each with a query or a stream
// info call: cheap enough to poll.
func (c *Console) readStats(ctx context.Context) []stat {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out []stat
	count := func(label, note, sql string) {
		var n int64
		if err := c.cfg.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			c.cfg.Logger.Warn("console: read figure", "figure", label, "error", err)
			out = append(out, stat{Label: label, Error: "unavailable"})
			return
		}
		out = append(out, stat{Label: label, Value: strconv.FormatInt(n, 10), Note: note})
	}
	var perMinute int64
	if err := c.cfg.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE created_at > now() - interval '1 minute'`).Scan(&perMinute); err != nil {
		out = append(out, stat{Label: "Commands/s", Error: "unavailable"})
	} else {
		out = append(out, stat{Label: "Commands/s", Value: strconv.FormatFloat(float64(perMinute)/60, 'f', 2, 64), Note: "keys stored in the last minute"})
	}
	if cons, err := c.cfg.JS.Consumer(ctx, c.cfg.CommandStream, c.cfg.Durable); err != nil {
		out = append(out, stat{Label: "Command backlog", Error: "unavailable: " + err.Error()})
	} else if info, err := cons.Info(ctx); err != nil {
		out = append(out, stat{Label: "Command backlog", Error: "unavailable: " + err.Error()})
	} else {
		out = append(out, stat{Label: "Command backlog", Value: strconv.FormatUint(info.NumPending, 10),
			Note: strconv.Itoa(info.NumAckPending) + " being processed, in " + c.cfg.CommandStream})
	}
	out = append(out, c.storeStat(ctx))
	count("Unpublished events", "in the outbox", `SELECT count(*) FROM outbox_pending`)
	count("Undelivered webhooks", "pending or being attempted", `SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' OR status = 'delivering'`) // each matches its partial index
	count("Failed webhooks", "every attempt failed; replay them once fixed", `SELECT count(*) FROM webhook_deliveries WHERE status = 'failed'`)
	// The open dead letters: those closed (discarded or resolved) stay in
	// the stream until their age drops them, but need no one.
	if n, err := c.dlq.Count(ctx); err != nil {
		c.cfg.Logger.Warn("console: read figure", "figure", "Dead letters", "error", err)
		out = append(out, stat{Label: "Dead letters", Error: "unavailable"})
	} else {
		out = append(out, stat{Label: "Dead letters", Value: strconv.FormatUint(n.Open, 10),
			Note: "open, of " + strconv.FormatUint(n.Total, 10) + " in " + c.cfg.DeadLetterStream})
	}
	for i := range out {
		out[i].Link = statLinks[out[i].Label]
	}
	return out
}

// storeStat is how full the command stream is, and the account's
// JetStream store when it has a limit: when either is full, new commands
// are refused at publishing.
func (c *Console) storeStat(ctx context.Context) stat {
	const label = "Command store"
	u, err := streams.ReadStoreUse(ctx, c.cfg.JS, c.cfg.CommandStream)
	if err != nil {
		return stat{Label: label, Error: "unavailable: " + err.Error()}
	}
	st := stat{Label: label, Value: ofLimit(u.Bytes, u.MaxBytes), Note: "in " + c.cfg.CommandStream}
	if u.AccountErr == nil && u.AccountMax > 0 {
		st.Note += "; the account's store " + ofLimit(u.AccountBytes, u.AccountMax)
	}
	if full := u.Full(); full != "" {
		st.Note = "FULL: " + full
	}
	return st
}

// ofLimit says n bytes of a limit: "3.2 MiB of 1.0 GiB (0 %)", or
// "3.2 MiB, no limit".
func ofLimit(n uint64, limit int64) string {
	if limit <= 0 {
		return byteSize(float64(n)) + ", no limit"
	}
	return byteSize(float64(n)) + " of " + byteSize(float64(limit)) + " (" + strconv.FormatFloat(100*float64(n)/float64(limit), 'f', 0, 64) + " %)"
}

// byteSize is n bytes in the largest binary unit it reaches.
func byteSize(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(n, 'f', 0, 64) + " B"
	}
	return strconv.FormatFloat(n, 'f', 1, 64) + " " + units[i]
}

func (c *Console) commands(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	data := struct {
		Company, Key string
		Trail        *ops.Trail
		Message      string
	}{Company: q.Get("company"), Key: q.Get("key")}
	status := http.StatusOK
	if data.Company != "" || data.Key != "" {
		tr, err := ops.CommandTrail(r.Context(), ops.TrailSource{Pool: c.cfg.Pool, JS: c.cfg.JS, CommandStream: c.cfg.CommandStream,
			Durable: c.cfg.Durable, DeadLetterStream: c.cfg.DeadLetterStream}, ops.KeyRef{Company: data.Company, Key: data.Key})
		switch ops.ErrorCode(err) {
		case "":
			if err != nil {
				c.app.Fail(w, r, s, err)
				return
			}
			data.Trail = &tr
			switch tr.State {
			case ops.TrailInFlight:
				data.Message = "No result is stored yet: the command is in flight, its message is in the command stream."
			case ops.TrailDeadLettered:
				data.Message = "No result is stored: the command was dead-lettered; replay it once the cause is fixed."
			case ops.TrailUnknown:
				data.Message = "No result is stored for this key: the command never committed, is still on its way, or the key was purged after the inbox retention."
				status = http.StatusNotFound
			}
		default:
			data.Message, status = err.Error(), http.StatusBadRequest
		}
	}
	c.app.Render(w, status, "commands", s, data)
}

// pageSize is how many rows a list page shows.
const pageSize = 50

func (c *Console) deadLetters(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	query := ops.DeadLetterQuery{Limit: pageSize, Company: q.Get("company"), Command: q.Get("command"), Code: q.Get("code")}
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "after", Message: "after must be a stream sequence"})
			return
		}
		query.After = n
	}
	page, err := c.dlq.Page(r.Context(), query)
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	next := ""
	if page.Next != 0 {
		v := r.URL.Query()
		v.Set("after", strconv.FormatUint(page.Next, 10))
		next = basePath + "/dead-letters?" + v.Encode()
	}
	action, err := web.NewActionKey()
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	c.app.Render(w, http.StatusOK, "deadletters", s, struct {
		Query  ops.DeadLetterQuery
		Page   ops.DeadLetterKeysetPage
		Next   string
		Action string
	}{query, page, next, action})
}

// replaySelected replays the dead letters ticked on a page, oldest first,
// each on its own: one that fails is reported and the others still go.
func (c *Console) replaySelected(w http.ResponseWriter, r *http.Request, s *session) {
	var seqs []uint64
	for _, v := range r.PostForm["seq"] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "seq", Message: "not a stream sequence: " + v})
			return
		}
		seqs = append(seqs, n)
	}
	switch {
	case len(seqs) == 0:
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "seq", Message: "no dead letter is selected"})
		return
	case len(seqs) > pageSize:
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "seq", Message: "at most a page of dead letters is replayed at once"})
		return
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	c.once(w, r, s, func(ctx context.Context) (string, error) {
		lines := make([]string, 0, len(seqs))
		failed := 0
		for _, seq := range seqs {
			rep, err := c.dlq.Replay(ctx, seq)
			if err != nil {
				failed++
				lines = append(lines, "dead letter "+strconv.FormatUint(seq, 10)+": not replayed: "+err.Error())
				continue
			}
			lines = append(lines, rep.String())
		}
		head := strconv.Itoa(len(seqs)-failed) + " of " + strconv.Itoa(len(seqs)) + " replayed"
		return head + "\n" + strings.Join(lines, "\n"), nil
	})
}

func (c *Console) deadLetter(w http.ResponseWriter, r *http.Request, s *session) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "sequence", Message: "not a stream sequence"})
		return
	}
	d, err := c.dlq.Get(r.Context(), seq)
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	d.Headers = maskHeaders(d.Headers)
	action, err := web.NewActionKey()
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	c.app.Render(w, http.StatusOK, "deadletter", s, deadLetterPage{Letter: d, Action: action})
}

// deadLetterPage is what the dead letter's page shows: the letter, the
// key of its forms, and, when a close was refused, why, with the reason
// typed.
type deadLetterPage struct {
	Letter  ops.DeadLetter
	Action  string
	Message string
	Reason  string
}

// closeDeadLetter closes a dead letter as discarded or resolved, with the
// operator's reason, under the operator's name. A form without a choice
// or a reason is shown again saying so, its action key unused.
func (c *Console) closeDeadLetter(w http.ResponseWriter, r *http.Request, s *session) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "sequence", Message: "not a stream sequence"})
		return
	}
	how, reason := r.PostFormValue("close"), r.PostFormValue("reason")
	var refusal string
	switch {
	case how != ops.Discarded && how != ops.Resolved:
		refusal = "Choose Discard or Mark resolved."
	case strings.TrimSpace(reason) == "":
		refusal = "Say why the dead letter is " + how + ": a reason is required, and is kept with who closed it and when."
	}
	if refusal != "" {
		d, err := c.dlq.Get(r.Context(), seq)
		if err != nil {
			c.app.Fail(w, r, s, err)
			return
		}
		d.Headers = maskHeaders(d.Headers)
		c.app.Render(w, http.StatusBadRequest, "deadletter", s, deadLetterPage{Letter: d, Action: r.PostFormValue("action"), Message: refusal, Reason: reason})
		return
	}
	c.once(w, r, s, func(ctx context.Context) (string, error) {
		d, err := c.dlq.Close(ctx, seq, how, reason, "console: "+s.Who.TokenName)
		if err != nil {
			return "", err
		}
		return "dead letter " + strconv.FormatUint(seq, 10) + " " + d.Closed.Action + " by " + d.Closed.Actor + ": " + d.Closed.Reason, nil
	})
}

// once runs act once per form (web.App.Once) and sends the browser to
// its outcome.
func (c *Console) once(w http.ResponseWriter, r *http.Request, s *session, act func(ctx context.Context) (string, error)) {
	if key, ok := c.app.Once(w, r, s, s.Who.TokenID, act); ok {
		http.Redirect(w, r, basePath+"/actions/"+key, http.StatusSeeOther)
	}
}

func (c *Console) replayDeadLetter(w http.ResponseWriter, r *http.Request, s *session) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "sequence", Message: "not a stream sequence"})
		return
	}
	c.once(w, r, s, func(ctx context.Context) (string, error) {
		rep, err := c.dlq.Replay(ctx, seq)
		if err != nil {
			return "", err
		}
		return rep.String(), nil
	})
}

func (c *Console) action(w http.ResponseWriter, r *http.Request, s *session) {
	outcome, err := c.app.Outcome(r.Context(), s.Who.TokenID, r.PathValue("key"))
	if errors.Is(err, web.ErrNoAction) {
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeNotFound, Message: "no such action of yours (actions are kept for a day)"})
		return
	}
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	text := "still running: reload in a moment"
	if outcome != nil {
		text = *outcome
	}
	c.app.Render(w, http.StatusOK, "action", s, text)
}

// delivery is a webhook delivery with its attempts and a replay form key.
type delivery struct {
	webhooks.Delivery
	EndpointURL string
	Log         []webhooks.Attempt
	Action      string
}

func (c *Console) webhooks(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	data := struct {
		Query      ops.DeliveryQuery
		Endpoint   string
		Endpoints  []webhooks.Endpoint
		Statuses   []string
		Deliveries []delivery
		Next       string
		// All: no company was given, and the page is every company's
		// failed deliveries.
		All bool
	}{Query: ops.DeliveryQuery{Company: q.Get("company"), Status: q.Get("status"), After: q.Get("after"), Limit: pageSize},
		Endpoint: q.Get("endpoint"), Statuses: []string{"pending", "delivering", "delivered", "failed"}}
	if data.Query.Company == "" {
		data.All, data.Query.Status, data.Endpoint = true, "failed", ""
	}
	// Endpoint URLs by endpoint, read per company on the page.
	urls := map[string]string{}
	read := map[string]bool{}
	endpointsOf := func(company string) ([]webhooks.Endpoint, error) {
		eps, err := ops.Endpoints(r.Context(), c.cfg.Pool, company)
		if err != nil {
			return nil, err
		}
		read[company] = true
		for _, ep := range eps {
			urls[ep.EndpointID] = redactURL(ep.URL)
		}
		return eps, nil
	}
	if !data.All {
		if data.Endpoint != "" {
			id, err := uuid.Parse(data.Endpoint)
			if err != nil {
				c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "endpoint", Message: "not an endpoint ID"})
				return
			}
			data.Query.Endpoint = id
		}
		eps, err := endpointsOf(data.Query.Company)
		if err != nil {
			c.app.Fail(w, r, s, err)
			return
		}
		data.Endpoints = eps
	}
	page, err := ops.DeliveryPage(r.Context(), c.cfg.Pool, data.Query)
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	ids := make([]uuid.UUID, len(page.Deliveries))
	for i, d := range page.Deliveries {
		ids[i] = d.ID
		if !read[d.Company] {
			if _, err := endpointsOf(d.Company); err != nil {
				c.app.Fail(w, r, s, err)
				return
			}
		}
	}
	logs, err := ops.AttemptLogs(r.Context(), c.cfg.Pool, ids)
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	for _, d := range page.Deliveries {
		action, err := web.NewActionKey()
		if err != nil {
			c.app.Fail(w, r, s, err)
			return
		}
		data.Deliveries = append(data.Deliveries, delivery{Delivery: d, EndpointURL: urls[d.EndpointID.String()], Log: logs[d.ID], Action: action})
	}
	if page.Next != "" {
		v := r.URL.Query()
		v.Set("after", page.Next)
		data.Next = basePath + "/webhooks?" + v.Encode()
	}
	c.app.Render(w, http.StatusOK, "webhooks", s, data)
}

func (c *Console) replayDelivery(w http.ResponseWriter, r *http.Request, s *session) {
	id, err := uuid.Parse(r.PostFormValue("delivery"))
	if err != nil {
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "delivery", Message: "not a delivery ID"})
		return
	}
	c.once(w, r, s, func(ctx context.Context) (string, error) {
		if err := ops.ReplayDelivery(ctx, c.cfg.Pool, id); err != nil {
			return "", err
		}
		return "delivery " + id.String() + " is due again now", nil
	})
}

func (c *Console) books(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	data := struct {
		Company, Month string
		TrialBalance   *ledger.TrialBalanceView
		VATReturn      *ledger.VATReturnView
		Downloads      []download
		Message        string

		// Receivables and Payables are aged at the month's last day.
		Receivables, Payables *ledger.AgedView
		// CustomerCredits and SupplierCredits are open then.
		CustomerCredits, SupplierCredits *ledger.CreditsView
	}{Company: q.Get("company"), Month: q.Get("month")}
	if data.Company != "" {
		if data.Month == "" {
			data.Month = time.Now().UTC().Format("2006-01")
		}
		month, err := ledger.ParsePeriod(data.Month)
		if err != nil {
			data.Message = "month: " + err.Error()
			c.app.Render(w, http.StatusBadRequest, "books", s, data)
			return
		}
		err = ops.Snapshot(r.Context(), c.cfg.Pool, func(tx pgx.Tx) error {
			tb, err := ops.TrialBalance(r.Context(), tx, data.Company, month.Last(), ledger.InCompanyCurrency)
			if err != nil {
				return err
			}
			vat, err := ops.VATReturn(r.Context(), tx, data.Company, month)
			if err != nil {
				return err
			}
			reg, err := ops.Register(r.Context(), tx, data.Company, month)
			if err != nil {
				return err
			}
			data.TrialBalance, data.VATReturn = &tb, &vat
			receivables, err := ops.Aged(r.Context(), tx, data.Company, ledger.AgedReceivables, month.Last())
			if err != nil {
				return err
			}
			payables, err := ops.Aged(r.Context(), tx, data.Company, ledger.AgedPayables, month.Last())
			if err != nil {
				return err
			}
			data.Receivables, data.Payables = &receivables, &payables
			customers, err := ops.Credits(r.Context(), tx, data.Company, ledger.CustomersCredits, month.Last())
			if err != nil {
				return err
			}
			suppliers, err := ops.Credits(r.Context(), tx, data.Company, ledger.SuppliersCredits, month.Last())
			if err != nil {
				return err
			}
			data.CustomerCredits, data.SupplierCredits = &customers, &suppliers
			data.Downloads = registerDownloads(data.Company, month, reg)
			return nil
		})
		if ops.ErrorCode(err) != "" {
			data.Message = err.Error()
		} else if err != nil {
			c.app.Fail(w, r, s, err)
			return
		}
	}
	c.app.Render(w, http.StatusOK, "books", s, data)
}

// download is a link to a register file.
type download struct {
	Label, Note, URL string
}

// registerDownloads are the links to month's register files of company:
// CSV and JSON of each side, and the i.SAF file (in parts when it has
// more than one).
func registerDownloads(company string, month ledger.Period, reg *ledger.Register) []download {
	link := func(format, side string, part int) string {
		v := url.Values{"company": {company}, "month": {month.String()}, "format": {format}}
		if side != "" {
			v.Set("side", side)
		}
		if part > 0 {
			v.Set("part", strconv.Itoa(part))
		}
		return basePath + "/books/register?" + v.Encode()
	}
	var out []download
	for _, side := range []struct{ side, label string }{{ops.RegisterSales, "Sales register"}, {ops.RegisterPurchases, "Purchase register"}, {ops.RegisterAll, "Whole register"}} {
		out = append(out,
			download{Label: side.label + " (CSV)", URL: link(ops.RegisterCSV, side.side, 0)},
			download{Label: side.label + " (JSON)", URL: link(ops.RegisterJSON, side.side, 0)})
	}
	if n := reg.ISAFParts(); n == 1 {
		out = append(out, download{Label: "i.SAF (XML)", Note: "documents: " + strconv.Itoa(len(reg.Documents)), URL: link(ops.RegisterISAF, "", 0)})
	} else {
		for p := 1; p <= n; p++ {
			out = append(out, download{Label: "i.SAF (XML) part " + strconv.Itoa(p) + " of " + strconv.Itoa(n), URL: link(ops.RegisterISAF, "", p)})
		}
	}
	return out
}

// register streams a month's register file of the company asked for.
func (c *Console) register(w http.ResponseWriter, r *http.Request, s *session) {
	q := r.URL.Query()
	month, err := ledger.ParsePeriod(q.Get("month"))
	if err != nil {
		c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "month", Message: "month: " + err.Error()})
		return
	}
	part := 0
	if p := q.Get("part"); p != "" {
		if part, err = strconv.Atoi(p); err != nil || part < 1 {
			c.app.Fail(w, r, s, &ops.Error{Code: ops.CodeInvalid, Field: "part", Message: "part must be 1 or more"})
			return
		}
	}
	var file ops.RegisterFile
	err = ops.Snapshot(r.Context(), c.cfg.Pool, func(tx pgx.Tx) error {
		reg, err := ops.Register(r.Context(), tx, q.Get("company"), month)
		if err != nil {
			return err
		}
		file, err = ops.RenderRegister(reg, q.Get("format"), q.Get("side"), part, time.Now())
		return err
	})
	if err != nil {
		c.app.Fail(w, r, s, err)
		return
	}
	w.Header().Set("Content-Type", file.ContentType)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": file.Name}))
	w.Header().Set("Content-Length", strconv.Itoa(len(file.Body)))
	if _, err := w.Write(file.Body); err != nil {
		c.cfg.Logger.Warn("console: send a register", "file", file.Name, "error", err)
	}
}

// redactURL hides the password of a URL that carries one.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
