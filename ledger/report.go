package ledger

import (
	"fmt"
	"sort"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Reports read the books; they never post. Amounts in them are exact
// decimals; their views show each amount with exactly its currency's
// minor-unit digits, like results and events. Balances are signed debit
// minus credit, whatever the account type: a credit balance (payables,
// revenue, output VAT) is negative. Nothing is converted between currencies:
// every report is per currency.

// CurrencyAmount is an amount in one currency.
type CurrencyAmount struct {
	Currency Currency
	Amount   decimal.Decimal
}

// TrialBalance is every account's debits, credits and balance per currency
// up to and including a date.
type TrialBalance struct {
	Company string
	AsOf    Date // zero: everything posted
	Basis   Basis
	Rows    []TrialBalanceRow
}

// Basis is which of a journal line's two amounts a report sums.
type Basis string

const (
	// InCompanyCurrency sums the amounts in the company's currency: the
	// books as they are filed, one currency.
	InCompanyCurrency Basis = "company"
	// InDocumentCurrency sums the lines' own amounts, each currency apart.
	InDocumentCurrency Basis = "document"
)

// ParseBasis reads "company" or "document".
func ParseBasis(s string) (Basis, error) {
	switch b := Basis(s); b {
	case InCompanyCurrency, InDocumentCurrency:
		return b, nil
	}
	return "", fmt.Errorf("%q is neither %q nor %q", s, InCompanyCurrency, InDocumentCurrency)
}

// TrialBalanceRow is one account in one currency.
type TrialBalanceRow struct {
	Account  Account
	Currency Currency
	Debits   decimal.Decimal
	Credits  decimal.Decimal
}

// Balance is debits minus credits.
func (r TrialBalanceRow) Balance() decimal.Decimal { return r.Debits.Sub(r.Credits) }

// TrialBalanceTotal sums one currency's rows.
type TrialBalanceTotal struct {
	Currency Currency
	Debits   decimal.Decimal
	Credits  decimal.Decimal
}

// Balance is debits minus credits: zero in balanced books.
func (t TrialBalanceTotal) Balance() decimal.Decimal { return t.Debits.Sub(t.Credits) }

// NewTrialBalance orders rows by account code and currency.
func NewTrialBalance(company string, asOf Date, rows []TrialBalanceRow) *TrialBalance {
	rows = append([]TrialBalanceRow(nil), rows...)
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Account.Code != rows[j].Account.Code {
			return rows[i].Account.Code < rows[j].Account.Code
		}
		return rows[i].Currency.Code < rows[j].Currency.Code
	})
	return &TrialBalance{Company: company, AsOf: asOf, Rows: rows}
}

// Totals sums the rows per currency, ordered by currency code.
func (tb *TrialBalance) Totals() []TrialBalanceTotal {
	byCode := map[string]*TrialBalanceTotal{}
	var codes []string
	for _, r := range tb.Rows {
		t := byCode[r.Currency.Code]
		if t == nil {
			t = &TrialBalanceTotal{Currency: r.Currency}
			byCode[r.Currency.Code] = t
			codes = append(codes, r.Currency.Code)
		}
		t.Debits, t.Credits = t.Debits.Add(r.Debits), t.Credits.Add(r.Credits)
	}
	sort.Strings(codes)
	out := make([]TrialBalanceTotal, 0, len(codes))
	for _, c := range codes {
		out = append(out, *byCode[c])
	}
	return out
}

// Balanced reports whether debits equal credits in every currency. The
// database refuses to commit an unbalanced entry, so false means the books
// were changed behind the ledger's back.
func (tb *TrialBalance) Balanced() bool {
	for _, t := range tb.Totals() {
		if !t.Balance().IsZero() {
			return false
		}
	}
	return true
}

// TrialBalanceView is a trial balance as reports show it.
type TrialBalanceView struct {
	Company string `json:"company"`
	AsOf    string `json:"as_of,omitempty"`
	// Currency is "company" (the books in the company's currency) or
	// "document" (each currency apart).
	Currency Basis                   `json:"currency"`
	Accounts []TrialBalanceRowView   `json:"accounts"`
	Totals   []TrialBalanceTotalView `json:"totals"`
	Balanced bool                    `json:"balanced"`
}

// TrialBalanceRowView is one account in one currency.
type TrialBalanceRowView struct {
	Code     string      `json:"code"`
	Name     string      `json:"name"`
	Type     AccountType `json:"type"`
	Currency string      `json:"currency"`
	Debits   string      `json:"debits"`
	Credits  string      `json:"credits"`
	Balance  string      `json:"balance"`
}

// TrialBalanceTotalView is one currency's totals.
type TrialBalanceTotalView struct {
	Currency string `json:"currency"`
	Debits   string `json:"debits"`
	Credits  string `json:"credits"`
	Balance  string `json:"balance"`
}

// View renders the trial balance.
func (tb *TrialBalance) View() TrialBalanceView {
	v := TrialBalanceView{
		Company: tb.Company, AsOf: tb.AsOf.String(), Balanced: tb.Balanced(), Currency: tb.Basis,
		Accounts: []TrialBalanceRowView{}, Totals: []TrialBalanceTotalView{},
	}
	for _, r := range tb.Rows {
		c := r.Currency
		v.Accounts = append(v.Accounts, TrialBalanceRowView{
			Code: r.Account.Code, Name: r.Account.Name, Type: r.Account.Type, Currency: c.Code,
			Debits: c.Format(r.Debits), Credits: c.Format(r.Credits), Balance: c.Format(r.Balance()),
		})
	}
	for _, t := range tb.Totals() {
		c := t.Currency
		v.Totals = append(v.Totals, TrialBalanceTotalView{
			Currency: c.Code, Debits: c.Format(t.Debits), Credits: c.Format(t.Credits), Balance: c.Format(t.Balance()),
		})
	}
	return v
}

// AccountLedger is one account's journal lines over a date range, per
// currency, with the balance brought forward and a running balance.
type AccountLedger struct {
	Company    string
	Account    Account
	From, To   Date // zero: unbounded
	Currencies []LedgerCurrency
}

// LedgerCurrency is the account's movements in one currency.
type LedgerCurrency struct {
	Currency Currency
	Opening  decimal.Decimal // the balance before From
	Entries  []LedgerEntry
}

// LedgerLine is one journal line on the account.
type LedgerLine struct {
	Date        Date
	EntryID     uuid.UUID
	Description string
	SourceType  string
	SourceID    uuid.UUID
	Currency    Currency
	Debit       decimal.Decimal
	Credit      decimal.Decimal
}

// LedgerEntry is a line with the account's balance after it.
type LedgerEntry struct {
	LedgerLine
	Balance decimal.Decimal
}

// NewAccountLedger groups lines (in posting order) by currency and runs each
// currency's balance on from its opening balance. A currency with an
// opening balance and no lines in the range still appears.
func NewAccountLedger(company string, account Account, from, to Date, opening []CurrencyAmount, lines []LedgerLine) *AccountLedger {
	byCode := map[string]*LedgerCurrency{}
	var codes []string
	get := func(c Currency) *LedgerCurrency {
		lc := byCode[c.Code]
		if lc == nil {
			lc = &LedgerCurrency{Currency: c}
			byCode[c.Code] = lc
			codes = append(codes, c.Code)
		}
		return lc
	}
	for _, o := range opening {
		lc := get(o.Currency)
		lc.Opening = lc.Opening.Add(o.Amount)
	}
	for _, l := range lines {
		lc := get(l.Currency)
		prev := lc.Opening
		if n := len(lc.Entries); n > 0 {
			prev = lc.Entries[n-1].Balance
		}
		lc.Entries = append(lc.Entries, LedgerEntry{LedgerLine: l, Balance: prev.Add(l.Debit).Sub(l.Credit)})
	}
	sort.Strings(codes)
	al := &AccountLedger{Company: company, Account: account, From: from, To: to, Currencies: []LedgerCurrency{}}
	for _, c := range codes {
		al.Currencies = append(al.Currencies, *byCode[c])
	}
	return al
}

// Debits sums the debits in the range.
func (c LedgerCurrency) Debits() decimal.Decimal {
	var s decimal.Decimal
	for _, e := range c.Entries {
		s = s.Add(e.Debit)
	}
	return s
}

// Credits sums the credits in the range.
func (c LedgerCurrency) Credits() decimal.Decimal {
	var s decimal.Decimal
	for _, e := range c.Entries {
		s = s.Add(e.Credit)
	}
	return s
}

// Closing is the balance at the end of the range.
func (c LedgerCurrency) Closing() decimal.Decimal {
	return c.Opening.Add(c.Debits()).Sub(c.Credits())
}

// AccountLedgerView is an account ledger as reports show it.
type AccountLedgerView struct {
	Company    string               `json:"company"`
	Account    Account              `json:"account"`
	From       string               `json:"from,omitempty"`
	To         string               `json:"to,omitempty"`
	Currencies []LedgerCurrencyView `json:"currencies"`
}

// LedgerCurrencyView is the account's movements in one currency.
type LedgerCurrencyView struct {
	Currency string            `json:"currency"`
	Opening  string            `json:"opening"`
	Debits   string            `json:"debits"`
	Credits  string            `json:"credits"`
	Closing  string            `json:"closing"`
	Entries  []LedgerEntryView `json:"entries"`
}

// LedgerEntryView is one line with the running balance.
type LedgerEntryView struct {
	Date           string `json:"date"`
	JournalEntryID string `json:"journal_entry_id"`
	Description    string `json:"description"`
	SourceType     string `json:"source_type"`
	SourceID       string `json:"source_id"`
	Debit          string `json:"debit"`
	Credit         string `json:"credit"`
	Balance        string `json:"balance"`
}

// View renders the account ledger.
func (al *AccountLedger) View() AccountLedgerView {
	v := AccountLedgerView{
		Company: al.Company, Account: al.Account, From: al.From.String(), To: al.To.String(),
		Currencies: []LedgerCurrencyView{},
	}
	for _, lc := range al.Currencies {
		c := lc.Currency
		cv := LedgerCurrencyView{
			Currency: c.Code, Opening: c.Format(lc.Opening), Debits: c.Format(lc.Debits()),
			Credits: c.Format(lc.Credits()), Closing: c.Format(lc.Closing()), Entries: []LedgerEntryView{},
		}
		for _, e := range lc.Entries {
			cv.Entries = append(cv.Entries, LedgerEntryView{
				Date: e.Date.String(), JournalEntryID: e.EntryID.String(), Description: e.Description,
				SourceType: e.SourceType, SourceID: e.SourceID.String(),
				Debit: c.Format(e.Debit), Credit: c.Format(e.Credit), Balance: c.Format(e.Balance),
			})
		}
		v.Currencies = append(v.Currencies, cv)
	}
	return v
}

// TotalsFromLines rebuilds a document's totals from its stored line amounts;
// rates[i] is the VAT rate of lines[i]. Stored amounts are authoritative: a
// report shows what was issued, not a recomputation.
func TotalsFromLines(lines []LineAmounts, rates []decimal.Decimal) Totals {
	t := Totals{Lines: lines}
	byRate := map[string]*RateTotal{}
	for i, l := range lines {
		t.Net, t.VAT, t.Gross = t.Net.Add(l.Net), t.VAT.Add(l.VAT), t.Gross.Add(l.Gross)
		k := rates[i].String()
		if byRate[k] == nil {
			byRate[k] = &RateTotal{Rate: rates[i]}
		}
		byRate[k].Net = byRate[k].Net.Add(l.Net)
		byRate[k].VAT = byRate[k].VAT.Add(l.VAT)
	}
	for _, r := range byRate {
		t.ByRate = append(t.ByRate, *r)
	}
	sort.Slice(t.ByRate, func(i, j int) bool { return t.ByRate[i].Rate.LessThan(t.ByRate[j].Rate) })
	return t
}

// InvoiceDetail is an issued invoice with the credit notes and payments
// against it, and where it stands now.
type InvoiceDetail struct {
	Invoice     *Invoice
	CreditNotes []InvoiceCredit
	// Payments are the payments' allocations and the customer's credit
	// applied to the invoice (Method MethodCustomerCredit).
	Payments []InvoicePayment
	// ToCustomerCredit is what credit notes took beyond what was open:
	// it went to the customer's credit, out of what was paid.
	ToCustomerCredit decimal.Decimal
}

// MethodCustomerCredit is the method of an InvoicePayment that is the
// customer's credit applied to the invoice (customer_credit.apply).
const MethodCustomerCredit = "customer_credit"

// InvoiceCredit is a credit note of the invoice.
type InvoiceCredit struct {
	ID        uuid.UUID
	Number    string
	IssueDate Date
	Reason    string
	Net, VAT  decimal.Decimal
}

// Gross is net plus VAT.
func (c InvoiceCredit) Gross() decimal.Decimal { return c.Net.Add(c.VAT) }

// InvoicePayment is the part of a payment allocated to the invoice.
type InvoicePayment struct {
	PaymentID  uuid.UUID
	PaymentRef string
	ReceivedOn Date
	Method     string
	Amount     decimal.Decimal
}

// Credited sums the gross of the credit notes.
func (d *InvoiceDetail) Credited() decimal.Decimal {
	var s decimal.Decimal
	for _, c := range d.CreditNotes {
		s = s.Add(c.Gross())
	}
	return s
}

// Paid sums the payments allocated to the invoice.
func (d *InvoiceDetail) Paid() decimal.Decimal {
	var s decimal.Decimal
	for _, p := range d.Payments {
		s = s.Add(p.Amount)
	}
	return s
}

// Open is what the customer still owes.
func (d *InvoiceDetail) Open() decimal.Decimal {
	return d.Invoice.Totals.Gross.Sub(d.Credited()).Sub(d.Paid()).Add(d.ToCustomerCredit)
}

// Status is open, partially_paid, paid or credited.
func (d *InvoiceDetail) Status() string {
	return InvoiceStatus(d.Invoice.Totals.Gross, d.Credited(), d.Paid().Sub(d.ToCustomerCredit))
}

// InvoiceDetailView is an invoice detail as reports show it.
type InvoiceDetailView struct {
	Invoice  InvoiceView `json:"invoice"`
	Status   string      `json:"status"`
	Credited string      `json:"credited"`
	Paid     string      `json:"paid"`
	// ToCustomerCredit: see InvoiceDetail.ToCustomerCredit.
	ToCustomerCredit string               `json:"to_customer_credit"`
	Open             string               `json:"open"`
	CreditNotes      []InvoiceCreditView  `json:"credit_notes"`
	Payments         []InvoicePaymentView `json:"payments"`
}

// InvoiceCreditView is one credit note of the invoice.
type InvoiceCreditView struct {
	CreditNoteID string `json:"credit_note_id"`
	Number       string `json:"number"`
	IssueDate    string `json:"issue_date"`
	Reason       string `json:"reason"`
	Net          string `json:"net"`
	VAT          string `json:"vat"`
	Gross        string `json:"gross"`
}

// InvoicePaymentView is one payment allocated to the invoice.
type InvoicePaymentView struct {
	PaymentID  string `json:"payment_id"`
	PaymentRef string `json:"payment_ref"`
	ReceivedOn string `json:"received_on"`
	Method     string `json:"method"`
	Amount     string `json:"amount"`
}

// View renders the invoice detail.
func (d *InvoiceDetail) View() InvoiceDetailView {
	c := d.Invoice.Currency
	v := InvoiceDetailView{
		Invoice: d.Invoice.View(), Status: d.Status(),
		Credited: c.Format(d.Credited()), Paid: c.Format(d.Paid()), Open: c.Format(d.Open()),
		ToCustomerCredit: c.Format(d.ToCustomerCredit),
		CreditNotes:      []InvoiceCreditView{}, Payments: []InvoicePaymentView{},
	}
	for _, cn := range d.CreditNotes {
		v.CreditNotes = append(v.CreditNotes, InvoiceCreditView{
			CreditNoteID: cn.ID.String(), Number: cn.Number, IssueDate: cn.IssueDate.String(), Reason: cn.Reason,
			Net: c.Format(cn.Net), VAT: c.Format(cn.VAT), Gross: c.Format(cn.Gross()),
		})
	}
	for _, p := range d.Payments {
		v.Payments = append(v.Payments, InvoicePaymentView{
			PaymentID: p.PaymentID.String(), PaymentRef: p.PaymentRef, ReceivedOn: p.ReceivedOn.String(),
			Method: p.Method, Amount: c.Format(p.Amount),
		})
	}
	return v
}

// DocumentType names the kind of a document in the invoice register.
type DocumentType string

const (
	DocumentInvoice         DocumentType = "invoice"
	DocumentCreditNote      DocumentType = "credit_note"
	DocumentPurchaseInvoice DocumentType = "purchase_invoice"
)

// Register is the VAT invoice register of a month: the sales invoices and
// credit notes issued and the purchase invoices received, by issue date.
type Register struct {
	Company   Company
	Period    Period
	Documents []RegisterDocument
}

// RegisterDocument is one document with its amounts per VAT rate, as
// printed on it (a credit note's are positive here; see Signed).
type RegisterDocument struct {
	Type         DocumentType
	Number       string // for a purchase invoice, the supplier's number
	Date         Date
	Counterparty Party // customer or supplier
	// CounterpartyCode is the counterparty's registration code when the
	// document gives it (a supplier's code), else "".
	CounterpartyCode string
	// Recorded is the day a purchase invoice was booked (recorded in the
	// books), in Lithuanian time; zero for sales documents.
	Recorded  Date
	Currency  Currency
	Reference *DocumentReference // a credit note's invoice
	Rates     []RateTotal
}

// RegisterTimeZone is the zone a purchase invoice's booking day
// (RegisterDocument.Recorded) is taken in: the register is Lithuania's.
const RegisterTimeZone = "Europe/Vilnius"

// DocumentReference names the document a correction refers to.
type DocumentReference struct {
	Number string
	Date   Date
}

// Sales reports whether the document is issued by the company (output VAT).
func (d *RegisterDocument) Sales() bool { return d.Type != DocumentPurchaseInvoice }

// Signed returns the amounts per rate as they count in the register and the
// VAT return: a credit note reduces them, so its amounts are negative.
func (d *RegisterDocument) Signed() []RateTotal {
	out := make([]RateTotal, len(d.Rates))
	for i, r := range d.Rates {
		if d.Type == DocumentCreditNote {
			r.Net, r.VAT = r.Net.Neg(), r.VAT.Neg()
		}
		out[i] = r
	}
	return out
}

// NewRegister orders the documents by date, number and type, and each
// document's rates ascending, so that every rendering is deterministic.
func NewRegister(company Company, p Period, docs []RegisterDocument) *Register {
	docs = append([]RegisterDocument(nil), docs...)
	for i := range docs {
		rates := append([]RateTotal(nil), docs[i].Rates...)
		sort.SliceStable(rates, func(a, b int) bool { return rateTreatmentLess(rates[a], rates[b]) })
		docs[i].Rates = rates
	}
	sort.SliceStable(docs, func(i, j int) bool {
		a, b := docs[i], docs[j]
		switch {
		case !a.Date.Equal(b.Date.Time):
			return a.Date.Before(b.Date.Time)
		case a.Number != b.Number:
			return a.Number < b.Number
		case a.Type != b.Type:
			return a.Type < b.Type
		}
		return a.Counterparty.ID < b.Counterparty.ID
	})
	return &Register{Company: company, Period: p, Documents: docs}
}

// rateTreatmentLess orders totals by rate, then treatment.
func rateTreatmentLess(a, b RateTotal) bool {
	if !a.Rate.Equal(b.Rate) {
		return a.Rate.LessThan(b.Rate)
	}
	return a.Treatment < b.Treatment
}

// RegisterRow is one document, VAT rate and treatment: a line of the CSV
// register.
// Amounts are signed (credit notes negative).
type RegisterRow struct {
	Type                DocumentType `json:"type"`
	Number              string       `json:"number"`
	Date                string       `json:"date"`
	CounterpartyID      string       `json:"counterparty_id"`
	CounterpartyVATID   string       `json:"counterparty_vat_id"`
	CounterpartyCountry string       `json:"counterparty_country"`
	CounterpartyName    string       `json:"counterparty_name"`
	TaxableValue        string       `json:"taxable_value"`
	VATRate             string       `json:"vat_rate"`
	VATAmount           string       `json:"vat_amount"`
	Currency            string       `json:"currency"`
	ReferenceNumber     string       `json:"reference_number"`
	// VATTreatment is the treatment of the row's lines ("" for lines
	// posted before lines carried one).
	VATTreatment VATTreatment `json:"vat_treatment"`
}

// Rows returns the register one row per document and VAT rate.
func (r *Register) Rows() []RegisterRow {
	rows := []RegisterRow{}
	for _, d := range r.Documents {
		ref := ""
		if d.Reference != nil {
			ref = d.Reference.Number
		}
		for _, t := range d.Signed() {
			rows = append(rows, RegisterRow{
				Type: d.Type, Number: d.Number, Date: d.Date.String(),
				CounterpartyID: d.Counterparty.ID, CounterpartyVATID: d.Counterparty.VATID,
				CounterpartyCountry: d.Counterparty.Country, CounterpartyName: d.Counterparty.Name,
				TaxableValue: d.Currency.Format(t.Net), VATRate: t.Rate.String(), VATAmount: d.Currency.Format(t.VAT),
				Currency: d.Currency.Code, ReferenceNumber: ref, VATTreatment: t.Treatment,
			})
		}
	}
	return rows
}

// RegisterView is the register as JSON reports show it.
type RegisterView struct {
	Company string        `json:"company"`
	VATID   string        `json:"vat_id"`
	Period  string        `json:"period"`
	Rows    []RegisterRow `json:"rows"`
}

// View renders the register.
func (r *Register) View() RegisterView {
	return RegisterView{Company: r.Company.ID, VATID: r.Company.VATID, Period: r.Period.String(), Rows: r.Rows()}
}

// VATReturn is the VAT of a month per currency: output VAT on sales
// invoices less credit notes, input VAT on purchase invoices, each by rate
// and by the documents' issue dates, VAT self-assessed on reverse-charged
// purchases, the fields of the FR0600 form each treatment goes to, and
// the difference payable.
type VATReturn struct {
	Company    Company
	Period     Period
	Currencies []VATReturnCurrency
}

// VATReturnCurrency is the VAT return in one currency.
type VATReturnCurrency struct {
	Currency Currency
	Output   []RateTotal // taxable value (Net) and VAT per rate
	Input    []RateTotal
	// SelfAssessed is the VAT of reverse-charged purchases per rate: the
	// company owes it as output VAT, and deducts it again in Input.
	SelfAssessed []RateTotal
	// Fields are the amounts of the FR0600 form's fields, each treatment
	// apart, in the order of the form (see FR0600Fields).
	Fields []FR0600Amount
}

func sumVAT(rs []RateTotal) decimal.Decimal {
	var s decimal.Decimal
	for _, r := range rs {
		s = s.Add(r.VAT)
	}
	return s
}

// OutputVAT sums the output VAT of sales.
func (c VATReturnCurrency) OutputVAT() decimal.Decimal { return sumVAT(c.Output) }

// SelfAssessedVAT sums the VAT assessed on reverse-charged purchases.
func (c VATReturnCurrency) SelfAssessedVAT() decimal.Decimal { return sumVAT(c.SelfAssessed) }

// InputVAT sums the input VAT, self-assessed VAT included.
func (c VATReturnCurrency) InputVAT() decimal.Decimal { return sumVAT(c.Input) }

// Payable is output and self-assessed VAT less input VAT; negative when it
// is reclaimable. Self-assessed VAT is in both, so it nets to zero.
func (c VATReturnCurrency) Payable() decimal.Decimal {
	return c.OutputVAT().Add(c.SelfAssessedVAT()).Sub(c.InputVAT())
}

// NewVATReturn sums the register, so the return and the register of a
// month always agree. The company's own currency is always shown, with
// zeros in a month without documents.
func NewVATReturn(r *Register) *VATReturn {
	type acc struct {
		cur                         Currency
		output, input, selfAssessed map[string]*RateTotal
		fields                      map[int]decimal.Decimal
	}
	byCode := map[string]*acc{}
	get := func(c Currency) *acc {
		a := byCode[c.Code]
		if a == nil {
			a = &acc{cur: c, output: map[string]*RateTotal{}, input: map[string]*RateTotal{}, selfAssessed: map[string]*RateTotal{},
				fields: map[int]decimal.Decimal{}}
			byCode[c.Code] = a
		}
		return a
	}
	if c, ok := LookupCurrency(r.Company.Currency); ok {
		get(c)
	}
	for _, d := range r.Documents {
		a := get(d.Currency)
		m := a.input
		if d.Sales() {
			m = a.output
		}
		add := func(m map[string]*RateTotal, t RateTotal) {
			k := t.Rate.String()
			if m[k] == nil {
				m[k] = &RateTotal{Rate: t.Rate}
			}
			m[k].Net, m[k].VAT = m[k].Net.Add(t.Net), m[k].VAT.Add(t.VAT)
		}
		for _, t := range d.Signed() {
			add(m, t)
			if !d.Sales() && t.Treatment.ReverseCharge() {
				add(a.selfAssessed, t)
			}
			for _, f := range fr0600Of(d.Sales(), t) {
				a.fields[f.field] = a.fields[f.field].Add(f.amount)
			}
		}
	}
	sorted := func(m map[string]*RateTotal) []RateTotal {
		out := []RateTotal{}
		for _, t := range m {
			out = append(out, *t)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Rate.LessThan(out[j].Rate) })
		return out
	}
	codes := make([]string, 0, len(byCode))
	for c := range byCode {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	vr := &VATReturn{Company: r.Company, Period: r.Period, Currencies: []VATReturnCurrency{}}
	for _, c := range codes {
		a := byCode[c]
		var fields []FR0600Amount
		for _, f := range FR0600Fields {
			if v, ok := a.fields[f.Number]; ok {
				fields = append(fields, FR0600Amount{FR0600Field: f, Amount: v})
			}
		}
		vr.Currencies = append(vr.Currencies, VATReturnCurrency{Currency: a.cur, Output: sorted(a.output), Input: sorted(a.input),
			SelfAssessed: sorted(a.selfAssessed), Fields: fields})
	}
	return vr
}

// VATReturnView is a VAT return as reports show it.
type VATReturnView struct {
	Company    string                  `json:"company"`
	VATID      string                  `json:"vat_id"`
	Period     string                  `json:"period"`
	From       string                  `json:"from"`
	To         string                  `json:"to"`
	Currencies []VATReturnCurrencyView `json:"currencies"`
}

// VATReturnCurrencyView is the VAT return in one currency.
type VATReturnCurrencyView struct {
	Currency     string     `json:"currency"`
	Output       []RateView `json:"output"`
	Input        []RateView `json:"input"`
	SelfAssessed []RateView `json:"self_assessed"`
	// Fields are the FR0600 form's fields the month has amounts in.
	Fields          []FR0600FieldView `json:"fr0600"`
	OutputVAT       string            `json:"output_vat"`
	SelfAssessedVAT string            `json:"self_assessed_vat"`
	InputVAT        string            `json:"input_vat"`
	Payable         string            `json:"payable"`
}

// FR0600FieldView is one field of the FR0600 form.
type FR0600FieldView struct {
	Field  int    `json:"field"`
	Label  string `json:"label"`
	Amount string `json:"amount"`
}

// View renders the VAT return.
func (vr *VATReturn) View() VATReturnView {
	v := VATReturnView{
		Company: vr.Company.ID, VATID: vr.Company.VATID, Period: vr.Period.String(),
		From: vr.Period.First().String(), To: vr.Period.Last().String(), Currencies: []VATReturnCurrencyView{},
	}
	rates := func(c Currency, rs []RateTotal) []RateView {
		out := []RateView{}
		for _, r := range rs {
			out = append(out, RateView{Rate: r.Rate.String(), Net: c.Format(r.Net), VAT: c.Format(r.VAT)})
		}
		return out
	}
	for _, cr := range vr.Currencies {
		c := cr.Currency
		fields := []FR0600FieldView{}
		for _, f := range cr.Fields {
			fields = append(fields, FR0600FieldView{Field: f.Number, Label: f.Label, Amount: c.Format(f.Amount)})
		}
		v.Currencies = append(v.Currencies, VATReturnCurrencyView{
			Currency: c.Code, Output: rates(c, cr.Output), Input: rates(c, cr.Input), SelfAssessed: rates(c, cr.SelfAssessed),
			Fields:    fields,
			OutputVAT: c.Format(cr.OutputVAT()), SelfAssessedVAT: c.Format(cr.SelfAssessedVAT()),
			InputVAT: c.Format(cr.InputVAT()), Payable: c.Format(cr.Payable()),
		})
	}
	return v
}
