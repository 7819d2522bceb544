package audit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints the report for a person: the checks, the violations,
// the stats and a verdict.
func (r *Report) WriteText(w io.Writer) error {
	scope := "all companies"
	if r.Company != "" {
		scope = "company " + r.Company
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Audit of %s as of %s\n\n", scope, r.AsOf.UTC().Format(time.RFC3339))
	fmt.Fprintln(tw, "CHECK\tCHECKED\tVIOLATIONS\tNOTE")
	var notRun, unfinished []string
	for _, c := range r.Checks {
		if c.Unfinished {
			unfinished = append(unfinished, c.Name)
			fmt.Fprintf(tw, "%s\tnot finished\t-\t%s\n", c.Name, c.Note)
			continue
		}
		if c.NotRun {
			notRun = append(notRun, c.Name)
			fmt.Fprintf(tw, "%s\tnot run\t-\t%s\n", c.Name, c.Note)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d %s\t%d\t%s\n", c.Name, c.Checked, c.Unit, c.Violations, c.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(r.Violations) > 0 {
		fmt.Fprintf(tw, "\nVIOLATION\tCOMPANY\tREF\tDETAIL\n")
		listed := map[string]int64{}
		for _, v := range r.Violations {
			listed[v.Check]++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Check, v.Company, v.Ref, v.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range r.Checks {
			if more := c.Violations - listed[c.Name]; more > 0 {
				fmt.Fprintf(w, "… and %d more %s violations not listed\n", more, c.Name)
			}
		}
	}

	s := r.Stats
	fmt.Fprintf(tw, "\ncompanies\t%d\n", s.Companies)
	horizon := "none stored"
	if s.InboxHorizon != nil {
		horizon = "kept from " + s.InboxHorizon.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(tw, "idempotency keys\t%d (%s)\n", s.InboxKeys, horizon)
	fmt.Fprintf(tw, "unpublished events\t%d%s\n", s.UnpublishedEvents, r.oldest(s.OldestUnpublished))
	fmt.Fprintf(tw, "undelivered deliveries\t%d%s\n", s.UndeliveredDeliveries, r.oldest(s.OldestUndelivered))
	fmt.Fprintf(tw, "parked deliveries\t%d (to disabled endpoints)\n", s.ParkedDeliveries)
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(notRun) > 0 {
		fmt.Fprintf(w, "\nNot run: %s (no NATS connection: the streams were not compared with the database)\n", strings.Join(notRun, ", "))
	}
	if r.OK() {
		_, err := fmt.Fprintln(w, "\nOK: no violations")
		return err
	}
	if len(unfinished) > 0 {
		fmt.Fprintf(w, "\nNot finished: %s (the audit's timeout passed; what they found is not reported)\n", strings.Join(unfinished, ", "))
	}
	var total int64
	var failed []string
	for _, c := range r.Checks {
		if c.Violations > 0 {
			total += c.Violations
			failed = append(failed, c.Name)
		}
	}
	if total == 0 {
		_, err := fmt.Fprintf(w, "\nINCOMPLETE: no violations in the %d check(s) that finished; %d did not finish\n",
			len(r.Checks)-len(unfinished)-len(notRun), len(unfinished))
		return err
	}
	_, err := fmt.Fprintf(w, "\nFAILED: %s in %s\n", plural(total, "violation"), strings.Join(failed, ", "))
	return err
}

func (r *Report) oldest(at *time.Time) string {
	if at == nil {
		return ""
	}
	return fmt.Sprintf(" (oldest %s old)", r.AsOf.Sub(*at).Round(time.Second))
}
