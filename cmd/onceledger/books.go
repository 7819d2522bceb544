package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/internal/ops"
	"github.com/onceledger/onceledger/ledger"
)

const booksUsage = `Usage: onceledger books <report> -company ID [flags]

Reads the books; posts nothing. Every report is per currency.

Reports:
  trial-balance  [-date YYYY-MM-DD]              debits, credits and balance per account (default: today)
  account        -account CODE [-from] [-to]     one account's lines with a running balance
  invoice        -invoice NUMBER|ID              an invoice, its credit notes, payments and status
  vat-return     -period YYYY-MM                 output VAT less credit notes, input VAT, payable
  register       -period YYYY-MM                 the month's invoice register (i.SAF-style)
  periods                                        the months with entries, open or closed (period.close)
  aged           -kind receivables|payables [-date YYYY-MM-DD] [-detail]
                                                 open invoices by customer or supplier and days past due (default: today)
  credits        -kind customers|suppliers [-date YYYY-MM-DD]
                                                 customers' credits (2200) or the company's with suppliers (1400), by party and currency

Output: -format text (default) or json; the register: csv (default), xml (i.SAF) or json;
aged: text, csv (one row per open document) or json.
Balances are debits minus credits: a credit balance is negative.
Run "onceledger books <report> -h" for a report's flags.

` + databaseNote + "\n" + cellsNote

var bookReports = []string{"trial-balance", "account", "invoice", "vat-return", "register", "periods", "aged", "credits"}

func cmdBooks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{"a report is required: one of " + strings.Join(bookReports, ", ") + ` (see "onceledger books -h")`}
	}
	name, args := args[0], args[1:]
	switch {
	case name == "-h" || name == "--help" || name == "help":
		fmt.Fprint(stdout, booksUsage)
		return nil
	case !slices.Contains(bookReports, name):
		return &usageError{fmt.Sprintf("unknown report %q: one of %s", name, strings.Join(bookReports, ", "))}
	}

	fs := flag.NewFlagSet("books "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (env DATABASE_URL)")
	company := fs.String("company", "", "company id (required)")
	var cf cellFlags
	cf.register(fs)
	formats := []string{"text", "json"}
	if name == "register" {
		formats = []string{"csv", "xml", "json"}
	}
	if name == "aged" {
		formats = []string{"text", "csv", "json"}
	}
	format := fs.String("format", formats[0], "output format: "+strings.Join(formats, ", "))
	var day, from, to, account, invoice, period, basis *string
	var part *int
	var kind *string
	var detail *bool
	switch name {
	case "trial-balance":
		day = fs.String("date", time.Now().Format("2006-01-02"), "include entries dated up to this day (YYYY-MM-DD)")
		basis = fs.String("currency", string(ledger.InCompanyCurrency),
			"company: every line in the company's currency (the books as filed); document: each document currency apart")
	case "account":
		account = fs.String("account", "", "account code, e.g. 1200 (required)")
		from = fs.String("from", "", "first day (YYYY-MM-DD); earlier entries make the opening balance (default: from the start)")
		to = fs.String("to", "", "last day (YYYY-MM-DD) (default: everything)")
	case "invoice":
		invoice = fs.String("invoice", "", "invoice number (INV-2026-000001) or id (required)")
	case "vat-return", "register":
		period = fs.String("period", "", "month, YYYY-MM (required)")
	case "aged":
		kind = fs.String("kind", "", "receivables (customers' invoices) or payables (suppliers' invoices) (required)")
		day = fs.String("date", time.Now().Format("2006-01-02"), "the day the items are open at and aged to (YYYY-MM-DD)")
		detail = fs.Bool("detail", false, "with -format text: list each open document under its customer or supplier")
	case "credits":
		kind = fs.String("kind", "", "customers (what the company owes them, 2200) or suppliers (what they owe it, 1400) (required)")
		day = fs.String("date", time.Now().Format("2006-01-02"), "the day the credits are open at (YYYY-MM-DD)")
	}
	if name == "register" {
		part = fs.Int("part", 0, "with -format xml: the part of an i.SAF file split into parts (1, 2, …); a month of more documents than one part holds needs it")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags of %s:\n", booksUsage, name)
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if err := cf.resolve(ctx, dsn, *company); err != nil {
		return err
	}
	*dsn = orDevDatabase(*dsn, stderr)
	switch {
	case fs.NArg() > 0:
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case *company == "":
		return &usageError{"-company is required"}
	case !slices.Contains(formats, *format):
		return &usageError{fmt.Sprintf("-format %q: %s takes %s", *format, name, strings.Join(formats, ", "))}
	case account != nil && *account == "":
		return &usageError{"-account is required"}
	case invoice != nil && *invoice == "":
		return &usageError{"-invoice is required"}
	case period != nil && *period == "":
		return &usageError{"-period is required (YYYY-MM)"}
	case kind != nil && *kind == "" && name == "credits":
		return &usageError{"-kind is required: customers or suppliers"}
	case kind != nil && *kind == "":
		return &usageError{"-kind is required: receivables or payables"}
	case part != nil && *part < 0:
		return &usageError{"-part must be 1 or more"}
	case part != nil && *part > 0 && *format != "xml":
		return &usageError{"-part is for -format xml"}
	}
	var side ledger.AgedKind
	var whose ledger.CreditsKind
	if kind != nil && name == "credits" {
		k, err := ledger.ParseCreditsKind(*kind)
		if err != nil {
			return &usageError{fmt.Sprintf("-kind: %v", err)}
		}
		whose = k
	} else if kind != nil {
		k, err := ledger.ParseAgedKind(*kind)
		if err != nil {
			return &usageError{fmt.Sprintf("-kind: %v", err)}
		}
		side = k
	}
	var in ledger.Basis
	if basis != nil {
		b, err := ledger.ParseBasis(*basis)
		if err != nil {
			return &usageError{fmt.Sprintf("-currency: %v", err)}
		}
		in = b
	}
	dates := map[string]*ledger.Date{}
	parseDate := func(flagName string, s *string) error {
		if s == nil || *s == "" {
			return nil
		}
		d, err := ledger.ParseDate(*s)
		if err != nil {
			return &usageError{fmt.Sprintf("-%s: %v", flagName, err)}
		}
		dates[flagName] = &d
		return nil
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"date", day}, {"from", from}, {"to", to}} {
		if err := parseDate(f.name, f.v); err != nil {
			return err
		}
	}
	at := func(flagName string) ledger.Date {
		if d := dates[flagName]; d != nil {
			return *d
		}
		return ledger.Date{}
	}
	if !at("from").IsZero() && !at("to").IsZero() && at("to").Before(at("from").Time) {
		return &usageError{"-to is before -from"}
	}
	var month ledger.Period
	if period != nil {
		p, err := ledger.ParsePeriod(*period)
		if err != nil {
			return &usageError{fmt.Sprintf("-period: %v", err)}
		}
		month = p
	}
	if *dsn == "" {
		return &usageError{"DATABASE_URL (or -database-url) is required"}
	}

	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := requireCurrentSchema(ctx, conn); err != nil {
		return err
	}
	// One snapshot for all of a report's queries.
	var view any
	var text func(io.Writer) error
	err = ops.Snapshot(ctx, conn, func(tx pgx.Tx) error {
		switch name {
		case "trial-balance":
			v, err := ops.TrialBalance(ctx, tx, *company, at("date"), in)
			view, text = v, func(w io.Writer) error { return writeTrialBalance(w, v) }
			return err
		case "account":
			v, err := ops.AccountLedger(ctx, tx, *company, *account, at("from"), at("to"))
			view, text = v, func(w io.Writer) error { return writeAccountLedger(w, v) }
			return err
		case "invoice":
			v, err := ops.Invoice(ctx, tx, *company, *invoice)
			view, text = v, func(w io.Writer) error { return writeInvoice(w, v) }
			return err
		case "vat-return":
			v, err := ops.VATReturn(ctx, tx, *company, month)
			view, text = v, func(w io.Writer) error { return writeVATReturn(w, v) }
			return err
		case "periods":
			v, err := ops.Periods(ctx, tx, *company)
			view, text = v, func(w io.Writer) error { return writePeriods(w, v) }
			return err
		case "aged":
			v, err := ops.Aged(ctx, tx, *company, side, at("date"))
			view, text = v, func(w io.Writer) error { return writeAged(w, v, *detail) }
			if *format == "csv" {
				text = v.WriteCSV
			}
			return err
		case "credits":
			v, err := ops.Credits(ctx, tx, *company, whose, at("date"))
			view, text = v, func(w io.Writer) error { return writeCredits(w, v) }
			return err
		}
		r, err := ops.Register(ctx, tx, *company, month)
		if err != nil {
			return err
		}
		switch *format {
		case "csv":
			text = r.WriteCSV
		case "xml":
			if *part > 0 {
				text = func(w io.Writer) error { return r.WriteISAFPart(w, time.Now(), *part) }
			} else {
				text = func(w io.Writer) error { return r.WriteISAF(w, time.Now()) }
			}
		default:
			view = r.View()
		}
		return nil
	})
	var le *ledger.Error
	if errors.As(err, &le) && le.Code == ledger.CodeUnknownCompany {
		// The caller's mistake, as audit takes it: nothing was read.
		return &usageError{fmt.Sprintf("-company %q: %s", *company, le.Message)}
	}
	if err != nil {
		return err
	}
	if *format == "json" {
		out, err := json.MarshalIndent(view, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(out))
		return err
	}
	return text(stdout)
}

// table writes aligned columns; the cells of numeric columns are padded on
// the left to one width first, so amounts line up on their decimal point.
type table struct {
	rows    [][]string
	numeric map[int]bool
}

func newTable(numeric ...int) *table {
	t := &table{numeric: map[int]bool{}}
	for _, c := range numeric {
		t.numeric[c] = true
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	width := map[int]int{}
	for _, r := range t.rows {
		for i, c := range r {
			if t.numeric[i] {
				width[i] = max(width[i], len(c))
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			if t.numeric[i] {
				c = strings.Repeat(" ", width[i]-len(c)) + c
			}
			cells[i] = c
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// blankZero leaves the empty side of a journal line empty.
func blankZero(amount string) string {
	if strings.Trim(amount, "0.") == "" {
		return ""
	}
	return amount
}

func writeTrialBalance(w io.Writer, v ledger.TrialBalanceView) error {
	asOf := v.AsOf
	if asOf == "" {
		asOf = "everything posted"
	}
	in := "in the company's currency"
	if v.Currency == ledger.InDocumentCurrency {
		in = "per document currency"
	}
	fmt.Fprintf(w, "Trial balance of %s as of %s, %s\n\n", v.Company, asOf, in)
	t := newTable(4, 5, 6)
	t.add("ACCOUNT", "NAME", "TYPE", "CURRENCY", "DEBITS", "CREDITS", "BALANCE")
	for _, r := range v.Accounts {
		t.add(r.Code, r.Name, string(r.Type), r.Currency, r.Debits, r.Credits, r.Balance)
	}
	for _, tot := range v.Totals {
		t.add("", "Total", "", tot.Currency, tot.Debits, tot.Credits, tot.Balance)
	}
	if err := t.write(w); err != nil {
		return err
	}
	if !v.Balanced {
		_, err := fmt.Fprintln(w, "\nWARNING: debits and credits differ; the books were changed outside the ledger.")
		return err
	}
	return nil
}

func writeAccountLedger(w io.Writer, v ledger.AccountLedgerView) error {
	span := "all dates"
	switch {
	case v.From != "" && v.To != "":
		span = v.From + " to " + v.To
	case v.From != "":
		span = "from " + v.From
	case v.To != "":
		span = "up to " + v.To
	}
	fmt.Fprintf(w, "Account %s %s (%s) of %s, %s\n", v.Account.Code, v.Account.Name, v.Account.Type, v.Company, span)
	if len(v.Currencies) == 0 {
		_, err := fmt.Fprintln(w, "\nNo entries.")
		return err
	}
	for _, c := range v.Currencies {
		fmt.Fprintf(w, "\n%s\n", c.Currency)
		t := newTable(3, 4, 5)
		t.add("DATE", "DESCRIPTION", "SOURCE", "DEBIT", "CREDIT", "BALANCE")
		t.add("", "Opening balance", "", "", "", c.Opening)
		for _, e := range c.Entries {
			t.add(e.Date, e.Description, e.SourceType, blankZero(e.Debit), blankZero(e.Credit), e.Balance)
		}
		t.add("", "Closing balance", "", c.Debits, c.Credits, c.Closing)
		if err := t.write(w); err != nil {
			return err
		}
	}
	return nil
}

func writeInvoice(w io.Writer, v ledger.InvoiceDetailView) error {
	inv := v.Invoice
	cust := inv.Customer
	ids := []string{cust.ID}
	if cust.VATID != "" {
		ids = append(ids, cust.VATID)
	}
	ids = append(ids, cust.Country)
	fmt.Fprintf(w, "Invoice %s (%s)\n", inv.Number, inv.InvoiceID)
	fmt.Fprintf(w, "Customer  %s (%s)\n", cust.Name, strings.Join(ids, ", "))
	fmt.Fprintf(w, "Order     %s\n", inv.OrderID)
	fmt.Fprintf(w, "Issued    %s, due %s\n", inv.IssueDate, inv.DueDate)
	fmt.Fprintf(w, "Status    %s\n\n", v.Status)
	t := newTable(1, 2, 3, 4, 5, 6)
	t.add("DESCRIPTION", "QUANTITY", "UNIT PRICE", "VAT %", "NET", "VAT", "GROSS")
	for _, l := range inv.Lines {
		t.add(l.Description, l.Quantity, l.UnitPrice, l.VATRate, l.Net, l.VAT, l.Gross)
	}
	t.add("Total "+inv.Currency, "", "", "", inv.Net, inv.VAT, inv.Gross)
	if err := t.write(w); err != nil {
		return err
	}
	if x := inv.Exchange; x != nil {
		// A VAT invoice in another currency states the rate, its date and
		// source, and the VAT in the company's currency.
		rateOf := "the invoice's own rate"
		if x.Source != "document" {
			rateOf = "recorded rate, " + x.Source
			if x.RateDate != "" {
				rateOf += ", of " + x.RateDate
			}
		}
		fmt.Fprintf(w, "\nExchange  %s %s per 1 %s (%s)\n", x.Rate, inv.Currency, x.Currency, rateOf)
		t := newTable(1, 2, 3)
		t.add("IN "+x.Currency, "NET", "VAT", "GROSS")
		for _, r := range x.VATBreakdown {
			t.add("VAT "+r.Rate+" %", r.Net, r.VAT, "")
		}
		t.add("Total", x.Net, x.VAT, x.Gross)
		if err := t.write(w); err != nil {
			return err
		}
	}
	if len(v.CreditNotes) > 0 {
		fmt.Fprintln(w, "\nCredit notes")
		t := newTable(3, 4, 5)
		t.add("NUMBER", "ISSUED", "REASON", "NET", "VAT", "GROSS")
		for _, c := range v.CreditNotes {
			t.add(c.Number, c.IssueDate, c.Reason, c.Net, c.VAT, c.Gross)
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	if len(v.Payments) > 0 {
		fmt.Fprintln(w, "\nPayments")
		t := newTable(3)
		t.add("REFERENCE", "RECEIVED", "METHOD", "AMOUNT")
		for _, p := range v.Payments {
			t.add(p.PaymentRef, p.ReceivedOn, p.Method, p.Amount)
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	t = newTable(1)
	t.add("Gross", inv.Gross)
	t.add("Credited", v.Credited)
	t.add("Paid", v.Paid)
	t.add("Open "+inv.Currency, v.Open)
	return t.write(w)
}

func writeVATReturn(w io.Writer, v ledger.VATReturnView) error {
	vatID := ""
	if v.VATID != "" {
		vatID = " (" + v.VATID + ")"
	}
	fmt.Fprintf(w, "VAT return of %s%s for %s (%s to %s)\n", v.Company, vatID, v.Period, v.From, v.To)
	for _, c := range v.Currencies {
		fmt.Fprintf(w, "\n%s\n", c.Currency)
		t := newTable(1, 2, 3)
		t.add("", "RATE %", "TAXABLE", "VAT")
		for _, r := range c.Output {
			t.add("Output (sales less credit notes)", r.Rate, r.Net, r.VAT)
		}
		for _, r := range c.Input {
			t.add("Input (purchases)", r.Rate, r.Net, r.VAT)
		}
		for _, r := range c.SelfAssessed {
			t.add("Self-assessed (reverse charge)", r.Rate, r.Net, r.VAT)
		}
		t.add("Output VAT", "", "", c.OutputVAT)
		t.add("Self-assessed VAT", "", "", c.SelfAssessedVAT)
		t.add("Input VAT", "", "", c.InputVAT)
		t.add("Payable (negative: reclaimable)", "", "", c.Payable)
		if err := t.write(w); err != nil {
			return err
		}
		if len(c.Fields) > 0 {
			fmt.Fprintln(w)
			f := newTable(0, 2)
			f.add("FR0600", "FIELD", "AMOUNT")
			for _, x := range c.Fields {
				f.add(fmt.Sprint(x.Field), x.Label, x.Amount)
			}
			if err := f.write(w); err != nil {
				return err
			}
		}
	}
	return nil
}

func writePeriods(w io.Writer, v ledger.PeriodsView) error {
	head := fmt.Sprintf("Periods of %s: closed through %s", v.Company, v.ClosedThrough)
	if v.ClosedThrough == "" {
		head = fmt.Sprintf("Periods of %s: no month closed yet", v.Company)
	}
	if _, err := fmt.Fprintf(w, "%s\n\n", head); err != nil {
		return err
	}
	t := newTable(2)
	t.add("PERIOD", "STATUS", "ENTRIES", "CLOSED AT", "BY", "KEY")
	for _, p := range v.Periods {
		at, by, key := "", "", ""
		if c := p.ClosedBy; c != nil {
			at, by, key = c.ClosedAt, c.ClosedBy, c.IdempotencyKey
		}
		t.add(p.Period, p.Status, fmt.Sprint(p.Entries), at, by, key)
	}
	return t.write(w)
}

func writeCredits(w io.Writer, v ledger.CreditsView) error {
	what := "Customers' credits"
	if v.Kind == ledger.SuppliersCredits {
		what = "Credits with suppliers"
	}
	fmt.Fprintf(w, "%s of %s at %s (account %s), in each currency and in %s at the rates they were booked at\n\n", what, v.Company, v.AsOf, v.Account, v.Currency)
	who := "CUSTOMER"
	if v.Kind == ledger.SuppliersCredits {
		who = "SUPPLIER"
	}
	t := newTable(2, 3)
	t.add(who, "CURRENCY", "CREDIT", "IN "+v.Currency, "SINCE", "LAST MOVEMENT")
	for _, c := range v.Credits {
		t.add(c.PartyID, c.Currency, c.Balance, c.BalanceCompany, c.Since, c.LastMovement)
	}
	t.add("Total", "", "", v.TotalCompany, "", "")
	return t.write(w)
}

func writeAged(w io.Writer, v ledger.AgedView, detail bool) error {
	fmt.Fprintf(w, "Aged %s of %s at %s, in %s, by days past due\n\n", v.Kind, v.Company, v.AsOf, v.Currency)
	who := "CUSTOMER"
	if v.Kind == ledger.AgedPayables {
		who = "SUPPLIER"
	}
	head := []string{who, "NAME"}
	for _, b := range ledger.AgedBuckets {
		head = append(head, strings.ToUpper(b.Label()))
	}
	t := newTable(2, 3, 4, 5, 6, 7)
	t.add(append(head, "TOTAL")...)
	for _, c := range v.Counterparties {
		t.add(append(append([]string{c.ID, c.Name}, c.Amounts.Buckets()...), c.Amounts.Total)...)
	}
	t.add(append(append([]string{"", "Total"}, v.Total.Buckets()...), v.Total.Total)...)
	if err := t.write(w); err != nil {
		return err
	}
	if !detail {
		return nil
	}
	for _, c := range v.Counterparties {
		fmt.Fprintf(w, "\n%s %s\n", c.ID, c.Name)
		d := newTable(3, 6, 7)
		d.add("NUMBER", "ISSUED", "DUE", "DAYS PAST DUE", "BUCKET", "CURRENCY", "OPEN", "OPEN "+v.Currency)
		for _, doc := range c.Documents {
			d.add(doc.Number, doc.IssueDate, doc.DueDate, fmt.Sprint(doc.DaysPastDue), doc.Bucket, doc.Currency, doc.Open, doc.OpenCompany)
		}
		if err := d.write(w); err != nil {
			return err
		}
	}
	return nil
}
