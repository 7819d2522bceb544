package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/webhooks"
)

const webhooksUsage = `Usage: onceledger webhooks <verb> [flags]

Lists endpoints, inspects, replays and tests webhook deliveries (endpoints
themselves are managed with the webhook_endpoint.* commands). Reads and
writes the database: DATABASE_URL or -database-url (found by itself
while onceledger dev runs).

Verbs:
  endpoints  -company ID                     a company's endpoints (never their secrets)
  deliveries [-endpoint ID | -company ID] [-status pending|delivering|delivered|failed] [-limit 50]
                                             the newest deliveries: of an endpoint, of a company
                                             across its endpoints, or of every company
  attempts   -delivery ID [-wide]            the attempt log of one delivery, errors whole
                                             (-wide: the response snippets whole too)
  test       -endpoint ID                    send the endpoint a signed webhook.test event now
  replay     -delivery ID                    attempt one delivery again, now
  replay     -endpoint ID -since TIME        attempt every failed delivery of an endpoint again
                                             (TIME: RFC 3339, or a duration back from now such as 72h)

Output: -format text (default) or json.

` + databaseNote + "\n" + cellsNote

func cmdWebhooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, webhooksUsage)
		if len(args) == 0 {
			return &usageError{"a verb is required: endpoints, deliveries, attempts, test or replay"}
		}
		return nil
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("webhooks "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	endpoint := fs.String("endpoint", "", "webhook endpoint ID")
	company := fs.String("company", "", "company ID")
	var cf cellFlags
	cf.register(fs)
	wide := fs.Bool("wide", false, "attempts: show response snippets whole")
	delivery := fs.String("delivery", "", "delivery ID")
	status := fs.String("status", "", "only deliveries with this status")
	limit := fs.Int("limit", 50, "most deliveries listed")
	since := fs.String("since", "", "replay failed deliveries created since (RFC 3339 or a duration such as 72h)")
	format := fs.String("format", "text", "text or json")
	fs.Usage = func() { fmt.Fprint(fs.Output(), webhooksUsage); fs.PrintDefaults() }
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if err := cf.resolve(ctx, dsn, *company); err != nil {
		return err
	}
	*dsn = orDevDatabase(*dsn, stderr)
	if *dsn == "" {
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	}
	if *format != "text" && *format != "json" {
		return &usageError{fmt.Sprintf("-format %q: text or json", *format)}
	}
	parseID := func(name, v string) (uuid.UUID, error) {
		id, err := uuid.Parse(v)
		if err != nil {
			return uuid.Nil, &usageError{fmt.Sprintf("-%s %q is not an ID", name, v)}
		}
		return id, nil
	}
	pool, err := pgxpool.New(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to Postgres: %w", err)
	}
	defer pool.Close()

	switch verb {
	case "endpoints":
		if *company == "" {
			return &usageError{"endpoints needs -company ID"}
		}
		list, err := ops.Endpoints(ctx, pool, *company)
		if err != nil {
			return err
		}
		if *format == "json" {
			return json.NewEncoder(stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENDPOINT\tSTATUS\tEVENTS\tSECRETS\tFAILING SINCE\tBREAKER\tURL\tNOTE")
		for _, e := range list {
			events := "all"
			if len(e.EventTypes) > 0 {
				events = strings.Join(e.EventTypes, ",")
			}
			failing := "-"
			if e.FailingSince != nil {
				failing = e.FailingSince.Format(time.RFC3339)
			}
			note := e.Description
			if e.DisabledReason != "" {
				note = strings.TrimSpace("disabled: " + e.DisabledReason + "; " + note)
			}
			// The breaker: closed; open until a probe may go; half-open once
			// that time has passed (the next delivery is the probe).
			breaker := "closed"
			if e.BreakerUntil != nil {
				breaker = "open until " + e.BreakerUntil.UTC().Format(time.RFC3339)
				if !e.BreakerUntil.After(time.Now()) {
					breaker = "half-open"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.EndpointID, e.Status, events, e.SecretsActive, failing, breaker, e.URL, oneLine(note))
		}
		return tw.Flush()
	case "deliveries":
		f := webhooks.DeliveryFilter{Company: *company, Status: *status, Limit: *limit}
		if *endpoint != "" {
			id, err := parseID("endpoint", *endpoint)
			if err != nil {
				return err
			}
			f.Endpoint = id
		}
		list, err := ops.Deliveries(ctx, pool, f)
		if err != nil {
			return err
		}
		if *format == "json" {
			return json.NewEncoder(stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DELIVERY\tCOMPANY\tENDPOINT\tEVENT\tTYPE\tSTATUS\tATTEMPTS\tNEXT ATTEMPT\tLAST")
		for _, d := range list {
			last := d.LastError
			if d.LastStatus != nil {
				last = fmt.Sprintf("HTTP %d %s", *d.LastStatus, last)
			}
			next := "-"
			if d.NextAttemptAt != nil {
				next = d.NextAttemptAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Company, d.EndpointID, d.EventID, d.EventType, d.Status, d.Attempts,
				next, oneLine(strings.TrimSpace(truncate(last, 60))))
		}
		return tw.Flush()
	case "test":
		id, err := parseID("endpoint", *endpoint)
		if err != nil {
			return err
		}
		d, err := ops.SendTest(ctx, pool, *company, id)
		if err != nil {
			return err
		}
		if *format == "json" {
			return json.NewEncoder(stdout).Encode(d)
		}
		fmt.Fprintf(stdout, "webhook.test event %s is due to endpoint %s as delivery %s; see: onceledger webhooks attempts -delivery %s\n",
			d.EventID, id, d.ID, d.ID)
		return nil
	case "attempts":
		id, err := parseID("delivery", *delivery)
		if err != nil {
			return err
		}
		list, err := ops.Attempts(ctx, pool, id)
		if err != nil {
			return err
		}
		if *format == "json" {
			return json.NewEncoder(stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		// The error is what an operator reads the log for, so it is never
		// cut; it is the last column, where its length costs no alignment.
		fmt.Fprintln(tw, "AT\tSTATUS\tLATENCY\tRESPONSE\tERROR")
		for _, a := range list {
			code := "-"
			if a.StatusCode != nil {
				code = fmt.Sprint(*a.StatusCode)
			}
			response := oneLine(a.Response)
			if !*wide {
				response = truncate(response, 60)
			}
			if response == "" {
				response = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%dms\t%s\t%s\n", a.At.Format(time.RFC3339Nano), code, a.LatencyMS, response, oneLine(a.Error))
		}
		return tw.Flush()
	case "replay":
		switch {
		case *delivery != "":
			id, err := parseID("delivery", *delivery)
			if err != nil {
				return err
			}
			if err := ops.ReplayDelivery(ctx, pool, id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "delivery %s is due again\n", id)
			return nil
		case *endpoint != "":
			id, err := parseID("endpoint", *endpoint)
			if err != nil {
				return err
			}
			from, err := parseSince(*since)
			if err != nil {
				return err
			}
			n, err := ops.ReplayFailed(ctx, pool, id, from)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%d failed deliveries of endpoint %s since %s are due again\n", n, id, from.Format(time.RFC3339))
			return nil
		}
		return &usageError{"replay needs -delivery ID, or -endpoint ID with -since"}
	}
	return &usageError{fmt.Sprintf("unknown verb %q: endpoints, deliveries, attempts, test or replay", verb)}
}

func parseSince(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, &usageError{"-since is required with -endpoint (RFC 3339 or a duration such as 72h)"}
	}
	if d, err := time.ParseDuration(v); err == nil {
		return time.Now().Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, &usageError{fmt.Sprintf("-since %q is neither RFC 3339 nor a duration", v)}
	}
	return t, nil
}

// oneLine keeps a value on its row of a table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
