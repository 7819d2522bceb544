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

	"github.com/onceledger/onceledger/webhooks"
)

const webhooksUsage = `Usage: onceledger webhooks <verb> [flags]

Inspects and replays webhook deliveries (endpoints themselves are managed
with the webhook_endpoint.* commands).

Verbs:
  deliveries -endpoint ID [-status pending|delivering|delivered|failed] [-limit 50]
  attempts   -delivery ID                    the attempt log of one delivery
  replay     -delivery ID                    attempt one delivery again, now
  replay     -endpoint ID -since TIME        attempt every failed delivery of an endpoint again
                                             (TIME: RFC 3339, or a duration back from now such as 72h)

Output: -format text (default) or json.

` + databaseNote

func cmdWebhooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, webhooksUsage)
		if len(args) == 0 {
			return &usageError{"a verb is required: deliveries, attempts or replay"}
		}
		return nil
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("webhooks "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	endpoint := fs.String("endpoint", "", "webhook endpoint ID")
	delivery := fs.String("delivery", "", "delivery ID")
	status := fs.String("status", "", "only deliveries with this status")
	limit := fs.Int("limit", 50, "most deliveries listed")
	since := fs.String("since", "", "replay failed deliveries created since (RFC 3339 or a duration such as 72h)")
	format := fs.String("format", "text", "text or json")
	fs.Usage = func() { fmt.Fprint(fs.Output(), webhooksUsage); fs.PrintDefaults() }
	if help, err := parseFlags(fs, args); help || err != nil {
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
	case "deliveries":
		id, err := parseID("endpoint", *endpoint)
		if err != nil {
			return err
		}
		list, err := webhooks.ListDeliveries(ctx, pool, id, *status, *limit)
		if err != nil {
			return err
		}
		if *format == "json" {
			return json.NewEncoder(stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DELIVERY\tEVENT\tTYPE\tSTATUS\tATTEMPTS\tLAST\tNEXT ATTEMPT")
		for _, d := range list {
			last := d.LastError
			if d.LastStatus != nil {
				last = fmt.Sprintf("HTTP %d %s", *d.LastStatus, last)
			}
			next := "-"
			if d.NextAttemptAt != nil {
				next = d.NextAttemptAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.EventID, d.EventType, d.Status, d.Attempts,
				strings.TrimSpace(truncate(last, 60)), next)
		}
		return tw.Flush()
	case "attempts":
		id, err := parseID("delivery", *delivery)
		if err != nil {
			return err
		}
		list, err := webhooks.Attempts(ctx, pool, id)
		if err != nil {
			return err
		}
		if *format == "json" {
			return json.NewEncoder(stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AT\tSTATUS\tLATENCY\tERROR\tRESPONSE")
		for _, a := range list {
			code := "-"
			if a.StatusCode != nil {
				code = fmt.Sprint(*a.StatusCode)
			}
			fmt.Fprintf(tw, "%s\t%s\t%dms\t%s\t%s\n", a.At.Format(time.RFC3339Nano), code, a.LatencyMS,
				truncate(a.Error, 60), truncate(strings.ReplaceAll(a.Response, "\n", " "), 60))
		}
		return tw.Flush()
	case "replay":
		switch {
		case *delivery != "":
			id, err := parseID("delivery", *delivery)
			if err != nil {
				return err
			}
			if err := webhooks.ReplayDelivery(ctx, pool, id); err != nil {
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
			n, err := webhooks.ReplayFailed(ctx, pool, id, from)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%d failed deliveries of endpoint %s since %s are due again\n", n, id, from.Format(time.RFC3339))
			return nil
		}
		return &usageError{"replay needs -delivery ID, or -endpoint ID with -since"}
	}
	return &usageError{fmt.Sprintf("unknown verb %q: deliveries, attempts or replay", verb)}
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
