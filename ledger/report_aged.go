package ledger

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// AgedKind is which side of the books an aged report reads.
type AgedKind string

const (
	// AgedReceivables are the customers' open invoices (account 1200).
	AgedReceivables AgedKind = "receivables"
	// AgedPayables are the suppliers' open purchase invoices (account 2100).
	AgedPayables AgedKind = "payables"
)

// ParseAgedKind reads "receivables" or "payables".
func ParseAgedKind(s string) (AgedKind, error) {
	switch k := AgedKind(s); k {
	case AgedReceivables, AgedPayables:
		return k, nil
	}
	return "", fmt.Errorf("%q is neither %q nor %q", s, AgedReceivables, AgedPayables)
}

// AgedBucket is how long an open item is past its due date at the
// report's date.
type AgedBucket int

// The buckets, by whole days past due at the report's date: a document due
// on that day or later is not yet due; due the day before, it is 1 day past
// due.
const (
	NotYetDue    AgedBucket = iota // due on the date or later
	PastDue1To30                   // 1 to 30 days past due
	PastDue31To60
	PastDue61To90
	PastDueOver90 // 91 days or more
	agedBuckets
)

// AgedBuckets are every bucket, in order.
var AgedBuckets = []AgedBucket{NotYetDue, PastDue1To30, PastDue31To60, PastDue61To90, PastDueOver90}

// String is the bucket's name, as the JSON view and the CSV rows give it.
func (b AgedBucket) String() string {
	switch b {
	case NotYetDue:
		return "not_due"
	case PastDue1To30:
		return "days_1_30"
	case PastDue31To60:
		return "days_31_60"
	case PastDue61To90:
		return "days_61_90"
	case PastDueOver90:
		return "days_over_90"
	}
	return "bucket_" + strconv.Itoa(int(b))
}

// Label is the bucket's heading in tables.
func (b AgedBucket) Label() string {
	switch b {
	case NotYetDue:
		return "Not due"
	case PastDue1To30:
		return "1-30"
	case PastDue31To60:
		return "31-60"
	case PastDue61To90:
		return "61-90"
	case PastDueOver90:
		return "Over 90"
	}
	return b.String()
}

// AgedBucketOf is the bucket of an item days past due (zero or less: not
// yet due).
func AgedBucketOf(days int) AgedBucket {
	switch {
	case days <= 0:
		return NotYetDue
	case days <= 30:
		return PastDue1To30
	case days <= 60:
		return PastDue31To60
	case days <= 90:
		return PastDue61To90
	}
	return PastDueOver90
}

// AgedItem is one document with an amount open at the report's date: a
// sales invoice (receivables) or a purchase invoice (payables).
type AgedItem struct {
	// CounterpartyID is the customer's ID, or the supplier's key (its VAT
	// ID, else its code, else its ID: see purchase_supplier_key);
	// CounterpartyName its name on the document.
	CounterpartyID, CounterpartyName string
	DocumentID                       uuid.UUID
	Number                           string // a purchase invoice's is the supplier's
	IssueDate, DueDate               Date
	Currency                         Currency
	// Open is what is open in the document's currency, OpenCompany in the
	// company's: at the document's booked rate, less what settled it at
	// the rates it was booked at. The report does not revalue them: a
	// month-end revaluation (fx.revalue) is an entry of its own on the
	// account, reversed the next day.
	Open, OpenCompany decimal.Decimal
}

// DaysPastDue is how many days past its due date the item is at asOf;
// zero when it is not yet due.
func (it AgedItem) DaysPastDue(asOf Date) int {
	days := int(asOf.Sub(it.DueDate.Time).Round(time.Hour).Hours() / 24)
	return max(days, 0)
}

// AgedAmounts are amounts per bucket.
type AgedAmounts [agedBuckets]decimal.Decimal

// Total sums the buckets.
func (a AgedAmounts) Total() decimal.Decimal {
	var s decimal.Decimal
	for _, v := range a {
		s = s.Add(v)
	}
	return s
}

// AgedCounterparty is one customer's or supplier's open items and their
// sums per bucket.
type AgedCounterparty struct {
	ID, Name string
	Amounts  AgedAmounts
	Items    []AgedItem
}

// AgedReport is the open items of one side of the books at a date, in
// the company's currency, per counterparty and bucket.
type AgedReport struct {
	Company Company
	// Currency is the company's, which every sum is in.
	Currency Currency
	Kind     AgedKind
	AsOf     Date
	Items    []AgedItem
}

// NewAgedReport orders the items by counterparty (name, then ID), due
// date, issue date and number, so that every rendering is deterministic.
func NewAgedReport(company Company, cur Currency, kind AgedKind, asOf Date, items []AgedItem) *AgedReport {
	items = append([]AgedItem(nil), items...)
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		switch {
		case a.CounterpartyID != b.CounterpartyID:
			return a.CounterpartyID < b.CounterpartyID
		case !a.DueDate.Equal(b.DueDate.Time):
			return a.DueDate.Before(b.DueDate.Time)
		case !a.IssueDate.Equal(b.IssueDate.Time):
			return a.IssueDate.Before(b.IssueDate.Time)
		}
		return a.Number < b.Number
	})
	return &AgedReport{Company: company, Currency: cur, Kind: kind, AsOf: asOf, Items: items}
}

// Bucket is the item's bucket at the report's date.
func (r *AgedReport) Bucket(it AgedItem) AgedBucket { return AgedBucketOf(it.DaysPastDue(r.AsOf)) }

// Counterparties groups the items per counterparty, ordered by name and
// ID; a counterparty is named as on its latest document.
func (r *AgedReport) Counterparties() []AgedCounterparty {
	var out []AgedCounterparty
	var latest Date
	for _, it := range r.Items {
		if len(out) == 0 || out[len(out)-1].ID != it.CounterpartyID {
			out = append(out, AgedCounterparty{ID: it.CounterpartyID, Name: it.CounterpartyName})
			latest = it.IssueDate
		}
		c := &out[len(out)-1]
		if !it.IssueDate.Before(latest.Time) {
			c.Name, latest = it.CounterpartyName, it.IssueDate
		}
		b := r.Bucket(it)
		c.Amounts[b] = c.Amounts[b].Add(it.OpenCompany)
		c.Items = append(c.Items, it)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Totals sums every item per bucket, in the company's currency.
func (r *AgedReport) Totals() AgedAmounts {
	var t AgedAmounts
	for _, it := range r.Items {
		b := r.Bucket(it)
		t[b] = t[b].Add(it.OpenCompany)
	}
	return t
}

// AgedView is an aged report as reports show it. Amounts of the buckets
// and totals are in the company's currency (Currency).
type AgedView struct {
	Company        string                 `json:"company"`
	Kind           AgedKind               `json:"kind"`
	AsOf           string                 `json:"as_of"`
	Currency       string                 `json:"currency"`
	Counterparties []AgedCounterpartyView `json:"counterparties"`
	Total          AgedAmountsView        `json:"total"`
}

// AgedAmountsView are amounts per bucket and their total.
type AgedAmountsView struct {
	NotDue     string `json:"not_due"`
	Days1To30  string `json:"days_1_30"`
	Days31To60 string `json:"days_31_60"`
	Days61To90 string `json:"days_61_90"`
	Over90     string `json:"days_over_90"`
	Total      string `json:"total"`
}

// Buckets are the bucket amounts in order, without the total.
func (a AgedAmountsView) Buckets() []string {
	return []string{a.NotDue, a.Days1To30, a.Days31To60, a.Days61To90, a.Over90}
}

// AgedCounterpartyView is one customer or supplier.
type AgedCounterpartyView struct {
	ID        string             `json:"id"`
	Name      string             `json:"name"`
	Amounts   AgedAmountsView    `json:"amounts"`
	Documents []AgedDocumentView `json:"documents"`
}

// AgedDocumentView is one open document: what is open in its currency and
// in the company's.
type AgedDocumentView struct {
	DocumentID  string `json:"document_id"`
	Number      string `json:"number"`
	IssueDate   string `json:"issue_date"`
	DueDate     string `json:"due_date"`
	DaysPastDue int    `json:"days_past_due"`
	Bucket      string `json:"bucket"`
	Currency    string `json:"currency"`
	Open        string `json:"open"`
	OpenCompany string `json:"open_company"`
}

func (r *AgedReport) amountsView(a AgedAmounts) AgedAmountsView {
	f := r.Currency.Format
	return AgedAmountsView{
		NotDue: f(a[NotYetDue]), Days1To30: f(a[PastDue1To30]), Days31To60: f(a[PastDue31To60]),
		Days61To90: f(a[PastDue61To90]), Over90: f(a[PastDueOver90]), Total: f(a.Total()),
	}
}

// View renders the report.
func (r *AgedReport) View() AgedView {
	v := AgedView{
		Company: r.Company.ID, Kind: r.Kind, AsOf: r.AsOf.String(), Currency: r.Currency.Code,
		Counterparties: []AgedCounterpartyView{}, Total: r.amountsView(r.Totals()),
	}
	for _, c := range r.Counterparties() {
		cv := AgedCounterpartyView{ID: c.ID, Name: c.Name, Amounts: r.amountsView(c.Amounts), Documents: []AgedDocumentView{}}
		for _, it := range c.Items {
			cv.Documents = append(cv.Documents, AgedDocumentView{
				DocumentID: it.DocumentID.String(), Number: it.Number,
				IssueDate: it.IssueDate.String(), DueDate: it.DueDate.String(),
				DaysPastDue: it.DaysPastDue(r.AsOf), Bucket: r.Bucket(it).String(),
				Currency: it.Currency.Code, Open: it.Currency.Format(it.Open), OpenCompany: r.Currency.Format(it.OpenCompany),
			})
		}
		v.Counterparties = append(v.Counterparties, cv)
	}
	return v
}

// AgedCSVHeader is the header row of an aged report's CSV: one row per
// open document.
var AgedCSVHeader = []string{
	"counterparty_id", "counterparty_name", "number", "issue_date", "due_date", "days_past_due", "bucket",
	"currency", "open", "company_currency", "open_company",
}

// WriteCSV writes the view's documents as CSV, a header row first.
func (v AgedView) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(AgedCSVHeader); err != nil {
		return err
	}
	for _, c := range v.Counterparties {
		for _, d := range c.Documents {
			if err := cw.Write([]string{
				c.ID, c.Name, d.Number, d.IssueDate, d.DueDate, strconv.Itoa(d.DaysPastDue), d.Bucket,
				d.Currency, d.Open, v.Currency, d.OpenCompany,
			}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
