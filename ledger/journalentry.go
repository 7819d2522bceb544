package ledger

import (
	"slices"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordJournalEntry is the body of journal_entry.record: a manual journal
// entry an accountant posts with a reason (an accrual, salaries, a bank
// fee, a correction). Its lines debit and credit accounts of the company's
// chart and balance in the entry's currency. Accounts that documents keep
// (receivables, payables, VAT, customer and supplier credits, fixed assets
// and their depreciation) are not posted to by hand, so the documents
// behind them stay the whole truth of those accounts.
type RecordJournalEntry struct {
	// EntryRef is the company's reference of the entry, recorded once per
	// company.
	EntryRef string `json:"entry_ref"`
	Date     Date   `json:"date"`
	Reason   string `json:"reason"`
	Currency string `json:"currency"`
	// ExchangeRate is the rate of an entry in another currency than the
	// company's (see Conversion); without it the rate recorded with
	// fx_rate.record for the entry's date is used.
	ExchangeRate *Decimal            `json:"exchange_rate,omitempty"`
	Lines        []ManualJournalLine `json:"lines"`
}

// ManualJournalLine is one line of a manual journal entry: exactly one of
// Debit and Credit, on one account.
type ManualJournalLine struct {
	Account     string   `json:"account"`
	Debit       *Decimal `json:"debit,omitempty"`
	Credit      *Decimal `json:"credit,omitempty"`
	Description string   `json:"description,omitempty"`
}

// MaxManualJournalLines is how many lines a manual journal entry may have.
const MaxManualJournalLines = 200

// documentAccounts are the accounts only documents post to, each with what
// keeps it: a manual entry on one of them would leave the account
// disagreeing with the documents (the open invoices, the VAT return, the
// credits, the asset register) that account for it.
var documentAccounts = map[string]string{
	AccountReceivables:             "accounts receivable are kept by invoices, credit notes and payments",
	AccountProviderClearing:        "the payment provider's clearing account is kept by payments and settlements",
	AccountInputVAT:                "input VAT is kept by purchase invoices and their credit notes",
	AccountSupplierCredits:         "supplier credits are kept by supplier payments, openings and their applications and refunds",
	AccountFixedAssets:             "fixed assets are kept by purchase invoices and the asset register",
	AccountAccumulatedDepreciation: "accumulated depreciation is kept by depreciation runs",
	AccountPayables:                "accounts payable are kept by purchase invoices, their credit notes, supplier payments and applied supplier credits",
	AccountCustomerCredits:         "customer credits are kept by payments, credit notes, openings and credit applications and refunds",
	AccountOutputVAT:               "output VAT is kept by invoices, credit notes and reverse-charged purchases",
}

// DocumentAccounts returns the accounts only documents post to, in order:
// what a manual journal entry refuses and the audit checks.
func DocumentAccounts() []string {
	codes := make([]string, 0, len(documentAccounts))
	for code := range documentAccounts {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return codes
}

func (*RecordJournalEntry) CommandName() string { return "journal_entry.record" }

// amount is the line's amount and whether it is a debit.
func (l *ManualJournalLine) amount() (decimal.Decimal, bool) {
	if l.Debit != nil {
		return l.Debit.Decimal, true
	}
	return l.Credit.Decimal, false
}

func (c *RecordJournalEntry) validate() *Error {
	cur, curErr := currency("currency", c.Currency)
	if err := firstError(
		required("entry_ref", c.EntryRef, 200),
		required("reason", c.Reason, 500),
		curErr,
	); err != nil {
		return err
	}
	switch {
	case c.Date.IsZero():
		return invalid("date", "is required")
	case len(c.Lines) < 2:
		return invalid("lines", "a journal entry needs at least 2 lines, %d given", len(c.Lines))
	case len(c.Lines) > MaxManualJournalLines:
		return invalid("lines", "a journal entry has at most %d lines, %d given", MaxManualJournalLines, len(c.Lines))
	}
	var debits, credits decimal.Decimal
	for i := range c.Lines {
		l := &c.Lines[i]
		f := fieldf("lines[%d]", i)
		if err := required(f+".account", l.Account, 20); err != nil {
			return err
		}
		if why, ok := documentAccounts[l.Account]; ok {
			e := invalid(f+".account", "account %s is posted to by documents only (%s): a manual journal entry cannot post to it", l.Account, why)
			e.Details["account"] = l.Account
			return e
		}
		if (l.Debit == nil) == (l.Credit == nil) {
			return invalid(f, "give exactly one of debit and credit")
		}
		amount, isDebit := l.amount()
		side := f + ".credit"
		if isDebit {
			side = f + ".debit"
		}
		switch {
		case !amount.IsPositive():
			return invalid(side, "must be greater than zero")
		case !cur.Fits(amount):
			return invalid(side, "%s has more decimals than %s allows", amount, cur.Code)
		case !Storable(amount):
			return invalid(side, "%s is too large", amount)
		case len(l.Description) > 500:
			return invalid(f+".description", "is longer than 500 characters")
		}
		if isDebit {
			debits = debits.Add(amount)
		} else {
			credits = credits.Add(amount)
		}
	}
	if !debits.Equal(credits) {
		e := invalid("lines", "debits total %s %s and credits %s %s: the entry is off by %s %s",
			cur.Format(debits), cur.Code, cur.Format(credits), cur.Code, cur.Format(debits.Sub(credits).Abs()), cur.Code)
		e.Details["debits"], e.Details["credits"], e.Details["difference"] = cur.Format(debits), cur.Format(credits), cur.Format(debits.Sub(credits))
		return e
	}
	if c.ExchangeRate != nil {
		return rateErr("exchange_rate", *c.ExchangeRate)
	}
	return nil
}

// ManualJournal is a recorded manual journal entry.
type ManualJournal struct {
	ID       uuid.UUID
	Company  string
	Command  *RecordJournalEntry
	Currency Currency
	// Conversion is the entry's rate (nil: in the company's currency).
	Conversion     *Conversion
	Lines          []JournalLine
	JournalEntryID uuid.UUID
}

// BookManualJournal builds the manual journal entry of c and its journal
// entry: each line on its account, in the entry's currency and, at conv,
// in the company's. Each line is converted on its own and rounded to the
// company currency's minor unit; when rounding leaves the debits and the
// credits apart in the company's currency, the difference is added to the
// largest line of the side that is short, so the entry balances in both
// currencies.
func BookManualJournal(company string, c *RecordJournalEntry, conv *Conversion, id, entryID uuid.UUID) (*ManualJournal, *JournalEntry) {
	cur, _ := LookupCurrency(c.Currency)
	lines := make([]JournalLine, len(c.Lines))
	var debits, credits decimal.Decimal
	for i := range c.Lines {
		amount, isDebit := c.Lines[i].amount()
		converted := conv.Convert(amount)
		if isDebit {
			lines[i] = JournalLine{Account: c.Lines[i].Account, Currency: cur.Code, Debit: amount, CompanyDebit: converted}
			debits = debits.Add(converted)
		} else {
			lines[i] = JournalLine{Account: c.Lines[i].Account, Currency: cur.Code, Credit: amount, CompanyCredit: converted}
			credits = credits.Add(converted)
		}
	}
	if diff := debits.Sub(credits); !diff.IsZero() {
		// The short side gets the difference, on its largest line: the
		// first of equals, so the same entry is always booked alike.
		shortIsDebit := diff.IsNegative()
		largest := -1
		for i, l := range lines {
			if l.Debit.IsPositive() != shortIsDebit {
				continue
			}
			if largest < 0 || sideOf(l).GreaterThan(sideOf(lines[largest])) {
				largest = i
			}
		}
		if shortIsDebit {
			lines[largest].CompanyDebit = lines[largest].CompanyDebit.Add(diff.Neg())
		} else {
			lines[largest].CompanyCredit = lines[largest].CompanyCredit.Add(diff)
		}
	}
	j := &ManualJournal{ID: id, Company: company, Command: c, Currency: cur, Conversion: conv, Lines: lines, JournalEntryID: entryID}
	return j, &JournalEntry{
		ID: entryID, Company: company, Date: c.Date,
		Description: "Journal entry " + c.EntryRef + ": " + c.Reason,
		SourceType:  "journal", SourceID: id, Lines: lines,
	}
}

// sideOf is a line's amount in the company's currency, on whichever side
// it is.
func sideOf(l JournalLine) decimal.Decimal { return l.CompanyDebit.Add(l.CompanyCredit) }

// ManualJournalView is a manual journal entry as results and events show
// it.
type ManualJournalView struct {
	ManualJournalID string                  `json:"manual_journal_id"`
	EntryRef        string                  `json:"entry_ref"`
	Date            string                  `json:"date"`
	Reason          string                  `json:"reason"`
	Currency        string                  `json:"currency"`
	Lines           []ManualJournalLineView `json:"lines"`
	// Conversion is the rate of an entry in another currency than the
	// company's.
	Conversion     *JournalRateView `json:"conversion,omitempty"`
	JournalEntryID string           `json:"journal_entry_id"`
}

// ManualJournalLineView is one line: its amount in the entry's currency
// and in the company's, on the same side; the other side is empty.
type ManualJournalLineView struct {
	Account       string `json:"account"`
	Description   string `json:"description,omitempty"`
	Debit         string `json:"debit,omitempty"`
	Credit        string `json:"credit,omitempty"`
	CompanyDebit  string `json:"company_debit,omitempty"`
	CompanyCredit string `json:"company_credit,omitempty"`
}

// JournalRateView is the rate a manual journal entry in another currency
// was converted at into the company's currency, Currency.
type JournalRateView struct {
	Rate     string `json:"rate"`
	Source   string `json:"source"`
	RateDate string `json:"rate_date,omitempty"`
	Currency string `json:"currency"`
}

// View renders the entry.
func (j *ManualJournal) View() ManualJournalView {
	cur := j.Currency
	companyCur := cur
	if j.Conversion != nil {
		companyCur = j.Conversion.To
	}
	v := ManualJournalView{
		ManualJournalID: j.ID.String(), EntryRef: j.Command.EntryRef, Date: j.Command.Date.String(),
		Reason: j.Command.Reason, Currency: cur.Code, Lines: []ManualJournalLineView{}, JournalEntryID: j.JournalEntryID.String(),
	}
	if c := j.Conversion; c != nil {
		v.Conversion = &JournalRateView{Rate: c.Rate.String(), Source: c.Source, RateDate: c.Date.String(), Currency: c.To.Code}
	}
	for i, l := range j.Lines {
		lv := ManualJournalLineView{Account: l.Account, Description: j.Command.Lines[i].Description}
		if j.Command.Lines[i].Debit != nil {
			lv.Debit, lv.CompanyDebit = cur.Format(l.Debit), companyCur.Format(l.CompanyDebit)
		} else {
			lv.Credit, lv.CompanyCredit = cur.Format(l.Credit), companyCur.Format(l.CompanyCredit)
		}
		v.Lines = append(v.Lines, lv)
	}
	return v
}
