package ledger

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RegisterAsset is the body of asset.register: a fixed asset and its
// straight-line depreciation schedule. Registering posts nothing: the
// acquisition is posted by its purchase invoice (account 1500).
type RegisterAsset struct {
	AssetID          string  `json:"asset_id"`
	Description      string  `json:"description"`
	AcquisitionDate  Date    `json:"acquisition_date"`
	Currency         string  `json:"currency"`
	Cost             Decimal `json:"cost"`
	ResidualValue    Decimal `json:"residual_value"`
	UsefulLifeMonths int     `json:"useful_life_months"`
	// InUseDate is the day the asset was put into use, on or after its
	// acquisition (default: the acquisition date).
	InUseDate Date `json:"in_use_date,omitzero"`
	// DepreciationStart is the month depreciation starts with:
	// DepreciationNextMonth (the default) or DepreciationSameMonth.
	DepreciationStart string `json:"depreciation_start,omitempty"`
	// Purchase is the purchase invoice line the asset was bought on, when
	// that purchase was recorded: the asset's register then names the
	// document its cost comes from.
	Purchase *PurchaseLineRef `json:"purchase,omitempty"`
}

// PurchaseLineRef names one line of a recorded purchase invoice.
type PurchaseLineRef struct {
	PurchaseInvoiceID string `json:"purchase_invoice_id"`
	LineNo            int    `json:"line_no"`
}

// The months depreciation may start with. Lithuanian practice, and the
// fixed-asset policies most companies follow, start with the month after
// the asset is put into use; some start with that month itself.
const (
	DepreciationNextMonth = "next_month"
	DepreciationSameMonth = "same_month"
)

func (*RegisterAsset) CommandName() string { return "asset.register" }

func (c *RegisterAsset) validate() *Error {
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(required("asset_id", c.AssetID, 100), required("description", c.Description, 500), curErr); err != nil {
		return err
	}
	switch {
	case c.AcquisitionDate.IsZero():
		return invalid("acquisition_date", "is required")
	case !c.Cost.IsPositive() || !cur.Fits(c.Cost.Decimal):
		return invalid("cost", "must be greater than zero with at most %d decimals", cur.Minor)
	case c.ResidualValue.IsNegative() || !cur.Fits(c.ResidualValue.Decimal):
		return invalid("residual_value", "must not be negative, with at most %d decimals", cur.Minor)
	case !c.ResidualValue.LessThan(c.Cost.Decimal):
		return invalid("residual_value", "must be less than the cost")
	case c.UsefulLifeMonths < 1 || c.UsefulLifeMonths > 1200:
		return invalid("useful_life_months", "must be between 1 and 1200")
	case !c.InUseDate.IsZero() && c.InUseDate.Before(c.AcquisitionDate.Time):
		return invalid("in_use_date", "%s is before acquisition_date %s: an asset is put into use once acquired", c.InUseDate, c.AcquisitionDate)
	case c.DepreciationStart != "" && c.DepreciationStart != DepreciationNextMonth && c.DepreciationStart != DepreciationSameMonth:
		return invalid("depreciation_start", "%q is not a start (one of: %s, %s)", c.DepreciationStart, DepreciationNextMonth, DepreciationSameMonth)
	case c.Purchase == nil:
		return nil
	}
	if _, err := uuid.Parse(c.Purchase.PurchaseInvoiceID); err != nil || len(c.Purchase.PurchaseInvoiceID) != 36 {
		return invalid("purchase.purchase_invoice_id", "must be the purchase invoice's id, a UUID such as 0b7a9c3e-5d2f-4e8a-9c1b-2f3e4d5a6b7c")
	}
	if c.Purchase.LineNo < 1 {
		return invalid("purchase.line_no", "must be a line number of the purchase invoice, from 1")
	}
	return nil
}

// InUse is the day the asset was put into use.
func (c *RegisterAsset) InUse() Date {
	if c.InUseDate.IsZero() {
		return c.AcquisitionDate
	}
	return c.InUseDate
}

// Start is the first month of the asset's depreciation.
func (c *RegisterAsset) Start() Period {
	p := PeriodOf(c.InUse())
	if c.DepreciationStart == DepreciationSameMonth {
		return p
	}
	return p.Next()
}

// Asset is a registered fixed asset.
type Asset struct {
	ID               uuid.UUID
	Ref              string
	Description      string
	AcquisitionDate  Date
	Currency         Currency
	Cost             decimal.Decimal
	ResidualValue    decimal.Decimal
	UsefulLifeMonths int
	// InUseDate is the day it was put into use, and Start the first month
	// of its depreciation; both zero for an asset registered before they
	// were kept, which depreciates from its month of acquisition.
	InUseDate Date
	Start     Period
	// Purchase is the purchase invoice line it was bought on, if named.
	Purchase *PurchaseLineRef
}

// Period is a calendar month, "2026-12".
type Period struct{ Year, Month int }

// ParsePeriod parses YYYY-MM.
func ParsePeriod(s string) (Period, error) {
	t, err := time.Parse("2006-01", s)
	if err != nil {
		return Period{}, fmt.Errorf("%q is not a month (YYYY-MM)", s)
	}
	return Period{t.Year(), int(t.Month())}, nil
}

func (p Period) String() string { return fmt.Sprintf("%04d-%02d", p.Year, p.Month) }

// First is the period's first day; Last its last.
func (p Period) First() Date {
	return Date{time.Date(p.Year, time.Month(p.Month), 1, 0, 0, 0, 0, time.UTC)}
}
func (p Period) Last() Date { return Date{p.First().AddDate(0, 1, -1)} }

func monthIndex(p Period) int { return p.Year*12 + p.Month - 1 }

// FirstPeriod is the first month of depreciation: Start, or the month of
// acquisition for an asset registered before Start was kept.
func (a *Asset) FirstPeriod() Period {
	if !a.Start.IsZero() {
		return a.Start
	}
	return Period{a.AcquisitionDate.Year(), int(a.AcquisitionDate.Month())}
}

// LastPeriod is the last month of the useful life.
func (a *Asset) LastPeriod() Period {
	i := monthIndex(a.FirstPeriod()) + a.UsefulLifeMonths - 1
	return Period{i / 12, i%12 + 1}
}

// Depreciation returns the straight-line charge for period k (0-based) of
// the life: round(base·(k+1)/n) − round(base·k/n), with base = cost −
// residual. Every month is within one minor unit of base/n, and the months
// add up to base exactly, in whatever order they are run.
func (a *Asset) Depreciation(p Period) (decimal.Decimal, *Error) {
	k := monthIndex(p) - monthIndex(a.FirstPeriod())
	if k < 0 || k >= a.UsefulLifeMonths {
		e := Errorf(CodeConflict, "period %s is outside the useful life of asset %q (%s to %s)", p, a.Ref, a.FirstPeriod(), a.LastPeriod())
		e.Details = map[string]any{"asset_id": a.Ref}
		return decimal.Zero, e
	}
	base := a.Cost.Sub(a.ResidualValue)
	n := decimal.NewFromInt(int64(a.UsefulLifeMonths))
	upTo := func(m int) decimal.Decimal {
		return a.Currency.Round(base.Mul(decimal.NewFromInt(int64(m))).Div(n))
	}
	return upTo(k + 1).Sub(upTo(k)), nil
}

// AssetView is an asset as results and events show it.
type AssetView struct {
	AssetID          string `json:"asset_id"`
	Description      string `json:"description"`
	AcquisitionDate  string `json:"acquisition_date"`
	InUseDate        string `json:"in_use_date"`
	Currency         string `json:"currency"`
	Cost             string `json:"cost"`
	ResidualValue    string `json:"residual_value"`
	UsefulLifeMonths int    `json:"useful_life_months"`
	FirstPeriod      string `json:"first_period"`
	LastPeriod       string `json:"last_period"`
	MonthlyAmount    string `json:"monthly_amount"`
	// Purchase is the purchase invoice line the asset was bought on, when
	// its registration named one.
	Purchase *PurchaseLineRef `json:"purchase,omitempty"`
}

// View renders the asset with its schedule's first monthly amount.
func (a *Asset) View() AssetView {
	monthly, _ := a.Depreciation(a.FirstPeriod())
	return AssetView{
		AssetID: a.Ref, Description: a.Description, AcquisitionDate: a.AcquisitionDate.String(), InUseDate: a.InUseDate.String(),
		Currency: a.Currency.Code, Cost: a.Currency.Format(a.Cost), ResidualValue: a.Currency.Format(a.ResidualValue),
		UsefulLifeMonths: a.UsefulLifeMonths, FirstPeriod: a.FirstPeriod().String(), LastPeriod: a.LastPeriod().String(),
		MonthlyAmount: a.Currency.Format(monthly), Purchase: a.Purchase,
	}
}

// RunDepreciation is the body of depreciation.run: post one month's
// depreciation of one asset. Each asset is depreciated once per month.
type RunDepreciation struct {
	AssetID string `json:"asset_id"`
	Period  string `json:"period"`
}

func (*RunDepreciation) CommandName() string { return "depreciation.run" }

func (c *RunDepreciation) validate() *Error {
	if err := required("asset_id", c.AssetID, 100); err != nil {
		return err
	}
	if _, err := ParsePeriod(c.Period); err != nil {
		return invalid("period", "%v", err)
	}
	return nil
}

// DepreciationRun is one posted month.
type DepreciationRun struct {
	ID             uuid.UUID
	Asset          *Asset
	Period         Period
	Amount         decimal.Decimal
	JournalEntryID uuid.UUID
}

// Depreciate builds the run for period and its entry, dated the period's
// last day: Dr depreciation expense / Cr accumulated depreciation.
func Depreciate(company string, a *Asset, p Period, id, entryID uuid.UUID) (*DepreciationRun, *JournalEntry, *Error) {
	amount, err := a.Depreciation(p)
	if err != nil {
		return nil, nil, err
	}
	if !amount.IsPositive() {
		e := Errorf(CodeConflict, "asset %q has nothing to depreciate in %s: its depreciable amount is below one minor unit a month", a.Ref, p)
		e.Details = map[string]any{"asset_id": a.Ref}
		return nil, nil, e
	}
	cur := a.Currency.Code
	return &DepreciationRun{ID: id, Asset: a, Period: p, Amount: amount, JournalEntryID: entryID}, &JournalEntry{
		ID: entryID, Company: company, Date: p.Last(),
		Description: fmt.Sprintf("Depreciation of %s for %s", a.Ref, p),
		SourceType:  "depreciation_run", SourceID: id,
		Lines: []JournalLine{debit(AccountDepreciation, cur, amount), credit(AccountAccumulatedDepreciation, cur, amount)},
	}, nil
}

// DepreciationView is a run as results and events show it.
type DepreciationView struct {
	DepreciationRunID string `json:"depreciation_run_id"`
	AssetID           string `json:"asset_id"`
	Period            string `json:"period"`
	Currency          string `json:"currency"`
	Amount            string `json:"amount"`
	JournalEntryID    string `json:"journal_entry_id"`
}

// View renders the run.
func (r *DepreciationRun) View() DepreciationView {
	return DepreciationView{
		DepreciationRunID: r.ID.String(), AssetID: r.Asset.Ref, Period: r.Period.String(),
		Currency: r.Asset.Currency.Code, Amount: r.Asset.Currency.Format(r.Amount), JournalEntryID: r.JournalEntryID.String(),
	}
}
