package ledger

import (
	"slices"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RecordOpeningBalances is the body of opening_balances.record: where the
// books of a company that moves here from another system begin. Its
// balances on Date, the first day of a month, post as one journal entry
// dated Date, and every month before it is closed: nothing is posted
// before the books begin. The receivables and payables are given by
// document, so each stays open to be paid later with payment.record and
// supplier_payment.record like the invoices posted here, and the aged
// reports show them; they make up accounts 1200 and 2100, which the lines
// cannot post to. The customers' credits (advances received, payments
// over what was owed) are given by customer and currency, so each can be
// applied or refunded later like a credit of these books; they make up
// account 2200, which the lines cannot post to either. The company's
// credits with suppliers (advances paid, payments over what was owed) are
// given likewise by supplier and currency and make up account 1400. A
// company records its opening balances once.
type RecordOpeningBalances struct {
	// Date is the first day of the first month the books keep.
	Date Date `json:"date"`
	// Lines are the balances of the chart's other accounts in the
	// company's currency, one side each, as the previous system's trial
	// balance shows them the day before Date.
	Lines           []OpeningLine           `json:"lines"`
	Receivables     []OpeningReceivable     `json:"receivables,omitempty"`
	Payables        []OpeningPayable        `json:"payables,omitempty"`
	CustomerCredits []OpeningCustomerCredit `json:"customer_credits,omitempty"`
	SupplierCredits []OpeningSupplierCredit `json:"supplier_credits,omitempty"`
}

// OpeningLine is one account's opening balance: exactly one of Debit and
// Credit, in the company's currency.
type OpeningLine struct {
	Account string   `json:"account"`
	Debit   *Decimal `json:"debit,omitempty"`
	Credit  *Decimal `json:"credit,omitempty"`
}

// OpeningReceivable is a sales invoice issued before the books begin and
// open on Date: Amount is what the customer still owes on it, in the
// invoice's currency; CompanyAmount what the previous books carry it at in
// the company's, required for an invoice in another currency (it is
// relieved at that rate when paid, as every invoice is at its own).
type OpeningReceivable struct {
	InvoiceNumber string   `json:"invoice_number"`
	CustomerID    string   `json:"customer_id"`
	IssueDate     Date     `json:"issue_date"`
	DueDate       *Date    `json:"due_date,omitempty"`
	Currency      string   `json:"currency"`
	Amount        Decimal  `json:"amount"`
	CompanyAmount *Decimal `json:"company_amount,omitempty"`
}

// OpeningPayable is a supplier's invoice received before the books begin
// and open on Date, named by the supplier's document number.
type OpeningPayable struct {
	DocumentNumber string   `json:"document_number"`
	SupplierID     string   `json:"supplier_id"`
	IssueDate      Date     `json:"issue_date"`
	DueDate        *Date    `json:"due_date,omitempty"`
	Currency       string   `json:"currency"`
	Amount         Decimal  `json:"amount"`
	CompanyAmount  *Decimal `json:"company_amount,omitempty"`
}

// OpeningCustomerCredit is what the company owes a customer on Date in
// one currency: an advance received or a payment beyond what was owed,
// not yet applied nor refunded. Amount is in the credit's currency;
// CompanyAmount what the previous books carry it at in the company's,
// required for a credit in another currency (it is relieved at that rate
// when applied or refunded, as every credit is at its own).
type OpeningCustomerCredit struct {
	CustomerID    string   `json:"customer_id"`
	Currency      string   `json:"currency"`
	Amount        Decimal  `json:"amount"`
	CompanyAmount *Decimal `json:"company_amount,omitempty"`
}

// OpeningSupplierCredit is what a supplier owes the company on Date in
// one currency: an advance paid or a payment beyond what was owed, not yet
// applied nor paid back. Amount is in the credit's currency;
// CompanyAmount what the previous books carry it at in the company's,
// required for a credit in another currency (it is relieved at that rate
// when applied or refunded, as every credit is at its own).
type OpeningSupplierCredit struct {
	SupplierID    string   `json:"supplier_id"`
	Currency      string   `json:"currency"`
	Amount        Decimal  `json:"amount"`
	CompanyAmount *Decimal `json:"company_amount,omitempty"`
}

// MaxOpeningItems is how many lines, receivables, payables and credits an
// opening may have together.
const MaxOpeningItems = 5000

func (*RecordOpeningBalances) CommandName() string { return "opening_balances.record" }

// openingItem is what the checks need of a receivable or a payable.
type openingItem struct {
	field, number, party, partyField, numberField string
	issue                                         Date
	due                                           *Date
	currency                                      string
	amount                                        Decimal
	company                                       *Decimal
}

func (c *RecordOpeningBalances) items() []openingItem {
	out := make([]openingItem, 0, len(c.Receivables)+len(c.Payables))
	for i, r := range c.Receivables {
		out = append(out, openingItem{fieldf("receivables[%d]", i), r.InvoiceNumber, r.CustomerID, "customer_id", "invoice_number",
			r.IssueDate, r.DueDate, r.Currency, r.Amount, r.CompanyAmount})
	}
	for i, p := range c.Payables {
		out = append(out, openingItem{fieldf("payables[%d]", i), p.DocumentNumber, p.SupplierID, "supplier_id", "document_number",
			p.IssueDate, p.DueDate, p.Currency, p.Amount, p.CompanyAmount})
	}
	return out
}

// openingCredit is what the checks need of a customer's credit or a
// credit with a supplier.
type openingCredit struct {
	field, party, partyField, partyWord, owes string
	currency                                  string
	amount                                    Decimal
	company                                   *Decimal
}

func (c *RecordOpeningBalances) credits() []openingCredit {
	out := make([]openingCredit, 0, len(c.CustomerCredits)+len(c.SupplierCredits))
	for i, cc := range c.CustomerCredits {
		out = append(out, openingCredit{fieldf("customer_credits[%d]", i), cc.CustomerID, "customer_id", "customer", "what the company owes the customer",
			cc.Currency, cc.Amount, cc.CompanyAmount})
	}
	for i, sc := range c.SupplierCredits {
		out = append(out, openingCredit{fieldf("supplier_credits[%d]", i), sc.SupplierID, "supplier_id", "supplier", "what the supplier owes the company",
			sc.Currency, sc.Amount, sc.CompanyAmount})
	}
	return out
}

func (c *RecordOpeningBalances) validate() *Error {
	count := len(c.Lines) + len(c.Receivables) + len(c.Payables) + len(c.CustomerCredits) + len(c.SupplierCredits)
	switch {
	case c.Date.IsZero():
		return invalid("date", "is required")
	case c.Date.Day() != 1:
		return invalid("date", "%s is not the first day of a month: the books begin with a month, and every month before it is closed", c.Date)
	case count == 0:
		return invalid("lines", "an opening needs balances: lines, receivables, payables, customer credits or supplier credits")
	case count > MaxOpeningItems:
		return invalid("lines", "an opening has at most %d lines, receivables, payables, customer credits and supplier credits together", MaxOpeningItems)
	}
	seenAccount := map[string]int{}
	for i, l := range c.Lines {
		f := fieldf("lines[%d]", i)
		if err := required(f+".account", l.Account, 20); err != nil {
			return err
		}
		switch l.Account {
		case AccountReceivables:
			return invalid(f+".account", "account %s is the sum of the open invoices: give them as receivables, each by its number", l.Account)
		case AccountPayables:
			return invalid(f+".account", "account %s is the sum of the open purchase invoices: give them as payables, each by its document number", l.Account)
		case AccountCustomerCredits:
			return invalid(f+".account", "account %s is the sum of the customers' credits: give them as customer_credits, each by customer and currency", l.Account)
		case AccountSupplierCredits:
			return invalid(f+".account", "account %s is the sum of the company's credits with suppliers: give them as supplier_credits, each by supplier and currency", l.Account)
		}
		if why, ok := documentAccounts[l.Account]; ok {
			e := invalid(f+".account", "account %s is posted to by documents only (%s): an opening cannot post to it", l.Account, why)
			e.Details["account"] = l.Account
			return e
		}
		if prev, ok := seenAccount[l.Account]; ok {
			return invalid(f+".account", "account %s has its balance in lines[%d] already: one line per account", l.Account, prev)
		}
		seenAccount[l.Account] = i
		if (l.Debit == nil) == (l.Credit == nil) {
			return invalid(f, "give exactly one of debit and credit")
		}
		side, amount := f+".credit", l.Credit
		if l.Debit != nil {
			side, amount = f+".debit", l.Debit
		}
		switch {
		case !amount.IsPositive():
			return invalid(side, "must be greater than zero")
		case !Storable(amount.Decimal):
			return invalid(side, "%s is too large", amount)
		}
	}
	seen := map[[3]string]string{}
	for _, it := range c.items() {
		cur, curErr := currency(it.field+".currency", it.currency)
		if err := firstError(required(it.field+"."+it.numberField, it.number, 100), required(it.field+"."+it.partyField, it.party, 100), curErr); err != nil {
			return err
		}
		key := [3]string{it.numberField, it.party, it.number}
		if it.numberField == "invoice_number" {
			// A company's invoice numbers are its own: one per number.
			key[1] = ""
		}
		if prev, ok := seen[key]; ok {
			return invalid(it.field+"."+it.numberField, "%s is given in %s already", it.number, prev)
		}
		seen[key] = it.field
		switch {
		case it.issue.IsZero():
			return invalid(it.field+".issue_date", "is required")
		case !it.issue.Before(c.Date.Time):
			return invalid(it.field+".issue_date", "%s is not before %s: a document of the books' own months is recorded as itself, not as an opening balance", it.issue, c.Date)
		case it.due != nil && it.due.Before(it.issue.Time):
			return invalid(it.field+".due_date", "%s is before the issue date %s", it.due, it.issue)
		case !it.amount.IsPositive():
			return invalid(it.field+".amount", "must be greater than zero: what is still open on the document")
		case !cur.Fits(it.amount.Decimal):
			return invalid(it.field+".amount", "%s has more decimals than %s allows", it.amount, cur.Code)
		case !Storable(it.amount.Decimal):
			return invalid(it.field+".amount", "%s is too large", it.amount)
		}
		if err := companyAmountErr(it.field, it.company); err != nil {
			return err
		}
	}
	// One credit per customer, and one per supplier, in each currency.
	seenCredit := map[[3]string]string{}
	for _, cr := range c.credits() {
		f := cr.field
		cur, curErr := currency(f+".currency", cr.currency)
		if err := firstError(required(f+"."+cr.partyField, cr.party, 100), curErr); err != nil {
			return err
		}
		key := [3]string{cr.partyField, cr.party, cur.Code}
		if prev, ok := seenCredit[key]; ok {
			e := invalid(f+".currency", "%s %q has its %s credit in %s already: one credit per %s and currency", cr.partyWord, cr.party, cur.Code, prev, cr.partyWord)
			e.Details[cr.partyField], e.Details["currency"] = cr.party, cur.Code
			return e
		}
		seenCredit[key] = f
		switch {
		case !cr.amount.IsPositive():
			return invalid(f+".amount", "must be greater than zero: %s", cr.owes)
		case !cur.Fits(cr.amount.Decimal):
			return invalid(f+".amount", "%s has more decimals than %s allows", cr.amount, cur.Code)
		case !Storable(cr.amount.Decimal):
			return invalid(f+".amount", "%s is too large", cr.amount)
		}
		if err := companyAmountErr(f, cr.company); err != nil {
			return err
		}
	}
	return nil
}

// companyAmountErr checks the company_amount of the document or credit at
// field, when it has one.
func companyAmountErr(field string, company *Decimal) *Error {
	switch {
	case company == nil:
		return nil
	case !company.IsPositive():
		return invalid(field+".company_amount", "must be greater than zero")
	case !Storable(company.Decimal):
		return invalid(field+".company_amount", "%s is too large", company)
	}
	return nil
}

// OpeningItem is an open receivable or payable of an opening: an invoice
// of the previous books, payable later by its number.
type OpeningItem struct {
	ID uuid.UUID
	// Kind is OpeningReceivableKind or OpeningPayableKind.
	Kind string
	// Party is the customer or the supplier.
	Party, Number string
	IssueDate     Date
	DueDate       *Date
	Currency      Currency
	// Amount is what is open in the document's currency, CompanyAmount in
	// the company's.
	Amount, CompanyAmount decimal.Decimal
}

// The kinds of an opening item.
const (
	OpeningReceivableKind = "receivable"
	OpeningPayableKind    = "payable"
)

// OpeningBalances is a recorded opening.
type OpeningBalances struct {
	ID       uuid.UUID
	Company  string
	Date     Date
	Currency Currency
	Lines    []JournalLine
	Items    []OpeningItem
	// CustomerCredits are the customers' credits the opening brings, each
	// a movement of kind CreditFromOpening, in the order given.
	CustomerCredits []CreditMovement
	// SupplierCredits are the company's credits with suppliers the
	// opening brings, each a movement of kind SupplierCreditFromOpening,
	// in the order given.
	SupplierCredits []SupplierCreditMovement
	// Debits and Credits are the entry's totals in the company's currency.
	Debits, Credits decimal.Decimal
	JournalEntryID  uuid.UUID
}

// SourceOpeningBalances is the source type of an opening's journal entry.
const SourceOpeningBalances = "opening_balances"

// BookOpeningBalances builds the opening of c for a company whose currency
// is cur: one line per account balance, one per open receivable (debiting
// 1200), one per open payable (crediting 2100), one per customer's credit
// (crediting 2200) and one per credit with a supplier (debiting 1400),
// each in the document's or credit's currency at its amount there and in
// the company's at its company amount, so that 1200, 2100, 2200 and 1400
// hold them in their own currencies, as documents posted here do. The
// entry balances in the company's currency, where it is the previous
// books' trial balance, and in each currency: the documents and credits
// of another currency are balanced there by a line on 3000 (Owner's
// equity) at their net amounts in it and in the company's, and that line
// by one on 3000 in the company's currency, the other way. The pair nets to nothing in the books as filed; read per
// currency, it is the position the previous books held in the currency,
// converted at their rates. It refuses an opening that does not balance,
// naming the difference, and a document or credit in the company's
// currency whose company_amount differs from its amount or one in another
// currency without it. Each customer's credit is a movement of the
// customer's credit of kind CreditFromOpening, each credit with a supplier
// one of kind SupplierCreditFromOpening, of the opening and its entry.
func BookOpeningBalances(company string, c *RecordOpeningBalances, cur Currency, id, entryID uuid.UUID, newID func() uuid.UUID) (*OpeningBalances, *JournalEntry, *Error) {
	o := &OpeningBalances{ID: id, Company: company, Date: c.Date, Currency: cur, JournalEntryID: entryID}
	for i, l := range c.Lines {
		f := fieldf("lines[%d]", i)
		if l.Debit != nil {
			if !cur.Fits(l.Debit.Decimal) {
				return nil, nil, invalid(f+".debit", "%s has more decimals than %s allows", l.Debit, cur.Code)
			}
			o.Lines = append(o.Lines, debit(l.Account, cur.Code, l.Debit.Decimal))
			o.Debits = o.Debits.Add(l.Debit.Decimal)
		} else {
			if !cur.Fits(l.Credit.Decimal) {
				return nil, nil, invalid(f+".credit", "%s has more decimals than %s allows", l.Credit, cur.Code)
			}
			o.Lines = append(o.Lines, credit(l.Account, cur.Code, l.Credit.Decimal))
			o.Credits = o.Credits.Add(l.Credit.Decimal)
		}
	}
	// position is each other currency's documents and credits net, debits
	// less credits, in that currency and in the company's; currencies in
	// order of first use.
	type net struct{ doc, company decimal.Decimal }
	position := map[string]net{}
	var currencies []string
	add := func(docCur Currency, n net) {
		if docCur.Code == cur.Code {
			return
		}
		if _, ok := position[docCur.Code]; !ok {
			currencies = append(currencies, docCur.Code)
		}
		p := position[docCur.Code]
		position[docCur.Code] = net{p.doc.Add(n.doc), p.company.Add(n.company)}
	}
	for _, it := range c.items() {
		docCur, _ := LookupCurrency(it.currency)
		companyAmount, err := openingCompanyAmount(it.field, "document", docCur, cur, it.amount, it.company)
		if err != nil {
			return nil, nil, err
		}
		item := OpeningItem{ID: newID(), Party: it.party, Number: it.number, IssueDate: it.issue, DueDate: it.due,
			Currency: docCur, Amount: it.amount.Decimal, CompanyAmount: companyAmount}
		n := net{it.amount.Decimal, companyAmount}
		if it.numberField == "invoice_number" {
			item.Kind = OpeningReceivableKind
			o.Lines = append(o.Lines, debit(AccountReceivables, docCur.Code, it.amount.Decimal).at(companyAmount))
			o.Debits = o.Debits.Add(companyAmount)
		} else {
			item.Kind = OpeningPayableKind
			o.Lines = append(o.Lines, credit(AccountPayables, docCur.Code, it.amount.Decimal).at(companyAmount))
			o.Credits = o.Credits.Add(companyAmount)
			n = net{n.doc.Neg(), n.company.Neg()}
		}
		add(docCur, n)
		o.Items = append(o.Items, item)
	}
	for i, cc := range c.CustomerCredits {
		f := fieldf("customer_credits[%d]", i)
		creditCur, _ := LookupCurrency(cc.Currency)
		companyAmount, err := openingCompanyAmount(f, "credit", creditCur, cur, cc.Amount, cc.CompanyAmount)
		if err != nil {
			return nil, nil, err
		}
		o.Lines = append(o.Lines, credit(AccountCustomerCredits, creditCur.Code, cc.Amount.Decimal).at(companyAmount))
		o.Credits = o.Credits.Add(companyAmount)
		add(creditCur, net{cc.Amount.Neg(), companyAmount.Neg()})
		o.CustomerCredits = append(o.CustomerCredits, CreditMovement{
			ID: newID(), CustomerID: cc.CustomerID, Currency: creditCur, Kind: CreditFromOpening,
			Amount: cc.Amount.Decimal, AmountCompany: companyAmount, SourceID: id, Date: c.Date, JournalEntryID: entryID,
		})
	}
	for i, sc := range c.SupplierCredits {
		f := fieldf("supplier_credits[%d]", i)
		creditCur, _ := LookupCurrency(sc.Currency)
		companyAmount, err := openingCompanyAmount(f, "credit", creditCur, cur, sc.Amount, sc.CompanyAmount)
		if err != nil {
			return nil, nil, err
		}
		o.Lines = append(o.Lines, debit(AccountSupplierCredits, creditCur.Code, sc.Amount.Decimal).at(companyAmount))
		o.Debits = o.Debits.Add(companyAmount)
		add(creditCur, net{sc.Amount.Decimal, companyAmount})
		o.SupplierCredits = append(o.SupplierCredits, SupplierCreditMovement{
			ID: newID(), SupplierID: sc.SupplierID, Currency: creditCur, Kind: SupplierCreditFromOpening,
			Amount: sc.Amount.Decimal, AmountCompany: companyAmount, OpeningBalancesID: id, Date: c.Date, JournalEntryID: entryID,
		})
	}
	if !o.Debits.Equal(o.Credits) {
		e := invalid("lines", "the opening's debits total %s %s and its credits %s %s (receivables, payables and credits included): it is off by %s %s",
			cur.Format(o.Debits), cur.Code, cur.Format(o.Credits), cur.Code, cur.Format(o.Debits.Sub(o.Credits).Abs()), cur.Code)
		e.Details["debits"], e.Details["credits"], e.Details["difference"] = cur.Format(o.Debits), cur.Format(o.Credits), cur.Format(o.Debits.Sub(o.Credits))
		return nil, nil, e
	}
	if o.Debits.IsZero() {
		return nil, nil, invalid("lines", "every balance is zero: an opening needs a balance to post")
	}
	for _, code := range currencies {
		switch p := position[code]; {
		case p.doc.IsPositive():
			o.Lines = append(o.Lines, credit(AccountEquity, code, p.doc).at(p.company), debit(AccountEquity, cur.Code, p.company))
		case p.doc.IsNegative():
			o.Lines = append(o.Lines, debit(AccountEquity, code, p.doc.Neg()).at(p.company.Neg()), credit(AccountEquity, cur.Code, p.company.Neg()))
		}
	}
	return o, &JournalEntry{
		ID: entryID, Company: company, Date: c.Date,
		Description: "Opening balances on " + c.Date.String(),
		SourceType:  SourceOpeningBalances, SourceID: id, Lines: o.Lines,
	}, nil
}

// openingCompanyAmount is what the document or credit (what) at field,
// of amount in docCur, is carried at in the company's currency cur: its
// amount in cur, where company must be absent or equal to it; company,
// required, in another currency.
func openingCompanyAmount(field, what string, docCur, cur Currency, amount Decimal, company *Decimal) (decimal.Decimal, *Error) {
	switch {
	case docCur.Code == cur.Code && company != nil && !company.Equal(amount.Decimal):
		return decimal.Decimal{}, invalid(field+".company_amount", "%s differs from the amount %s, and the %s is in the company's currency %s", company, amount, what, cur.Code)
	case docCur.Code != cur.Code && company == nil:
		return decimal.Decimal{}, invalid(field+".company_amount", "is required for a %s in %s: what the previous books carry it at in %s", what, docCur.Code, cur.Code)
	case company != nil:
		if !cur.Fits(company.Decimal) {
			return decimal.Decimal{}, invalid(field+".company_amount", "%s has more decimals than %s allows", company, cur.Code)
		}
		return company.Decimal, nil
	}
	return amount.Decimal, nil
}

// OpeningBalancesView is an opening as results and events show it.
type OpeningBalancesView struct {
	OpeningBalancesID string                      `json:"opening_balances_id"`
	Date              string                      `json:"date"`
	Currency          string                      `json:"currency"`
	Lines             []OpeningLineView           `json:"lines"`
	Receivables       []OpeningDocumentView       `json:"receivables"`
	Payables          []OpeningDocumentView       `json:"payables"`
	CustomerCredits   []OpeningCreditView         `json:"customer_credits"`
	SupplierCredits   []OpeningSupplierCreditView `json:"supplier_credits"`
	Totals            OpeningBalancesTotalView    `json:"totals"`
	JournalEntryID    string                      `json:"journal_entry_id"`
}

// OpeningLineView is one account's opening balance in the company's
// currency as the entry posts it (the receivables, payables, customer
// credits and credits with suppliers as one line each on 1200, 2100, 2200
// and 1400).
type OpeningLineView struct {
	Account string `json:"account"`
	Debit   string `json:"debit,omitempty"`
	Credit  string `json:"credit,omitempty"`
}

// OpeningDocumentView is an open receivable or payable.
type OpeningDocumentView struct {
	OpeningItemID string `json:"opening_item_id"`
	// Number is the invoice number of a receivable, the supplier's
	// document number of a payable.
	Number        string `json:"number"`
	CustomerID    string `json:"customer_id,omitempty"`
	SupplierID    string `json:"supplier_id,omitempty"`
	IssueDate     string `json:"issue_date"`
	DueDate       string `json:"due_date,omitempty"`
	Currency      string `json:"currency"`
	Amount        string `json:"amount"`
	CompanyAmount string `json:"company_amount"`
}

// OpeningCreditView is a customer's credit the opening brings: Amount in
// its currency, CompanyAmount in the company's.
type OpeningCreditView struct {
	CustomerID    string `json:"customer_id"`
	Currency      string `json:"currency"`
	Amount        string `json:"amount"`
	CompanyAmount string `json:"company_amount"`
}

// OpeningSupplierCreditView is a credit with a supplier the opening
// brings: Amount in its currency, CompanyAmount in the company's.
type OpeningSupplierCreditView struct {
	SupplierID    string `json:"supplier_id"`
	Currency      string `json:"currency"`
	Amount        string `json:"amount"`
	CompanyAmount string `json:"company_amount"`
}

// OpeningBalancesTotalView are the entry's totals in the company's
// currency.
type OpeningBalancesTotalView struct {
	Debits  string `json:"debits"`
	Credits string `json:"credits"`
}

// View renders the opening: each account's balance in code order, then
// the documents, the customers' credits and the credits with suppliers in
// the order given.
func (o *OpeningBalances) View() OpeningBalancesView {
	cur := o.Currency
	v := OpeningBalancesView{
		OpeningBalancesID: o.ID.String(), Date: o.Date.String(), Currency: cur.Code,
		Lines: []OpeningLineView{}, Receivables: []OpeningDocumentView{}, Payables: []OpeningDocumentView{}, CustomerCredits: []OpeningCreditView{},
		SupplierCredits: []OpeningSupplierCreditView{},
		Totals:          OpeningBalancesTotalView{Debits: cur.Format(o.Debits), Credits: cur.Format(o.Credits)},
		JournalEntryID:  o.JournalEntryID.String(),
	}
	// Each account's balance, debits less credits in the company's
	// currency: the currency pairs on 3000 net out.
	balance := map[string]decimal.Decimal{}
	var accounts []string
	for _, l := range o.Lines {
		if _, ok := balance[l.Account]; !ok {
			accounts = append(accounts, l.Account)
		}
		balance[l.Account] = balance[l.Account].Add(l.CompanyDebit).Sub(l.CompanyCredit)
	}
	slices.Sort(accounts)
	for _, a := range accounts {
		switch b := balance[a]; {
		case b.IsPositive():
			v.Lines = append(v.Lines, OpeningLineView{Account: a, Debit: cur.Format(b)})
		case b.IsNegative():
			v.Lines = append(v.Lines, OpeningLineView{Account: a, Credit: cur.Format(b.Neg())})
		}
	}
	for _, it := range o.Items {
		d := OpeningDocumentView{
			OpeningItemID: it.ID.String(), Number: it.Number, IssueDate: it.IssueDate.String(), Currency: it.Currency.Code,
			Amount: it.Currency.Format(it.Amount), CompanyAmount: cur.Format(it.CompanyAmount),
		}
		if it.DueDate != nil {
			d.DueDate = it.DueDate.String()
		}
		if it.Kind == OpeningReceivableKind {
			d.CustomerID = it.Party
			v.Receivables = append(v.Receivables, d)
		} else {
			d.SupplierID = it.Party
			v.Payables = append(v.Payables, d)
		}
	}
	for _, m := range o.CustomerCredits {
		v.CustomerCredits = append(v.CustomerCredits, OpeningCreditView{
			CustomerID: m.CustomerID, Currency: m.Currency.Code, Amount: m.Currency.Format(m.Amount), CompanyAmount: cur.Format(m.AmountCompany),
		})
	}
	for _, m := range o.SupplierCredits {
		v.SupplierCredits = append(v.SupplierCredits, OpeningSupplierCreditView{
			SupplierID: m.SupplierID, Currency: m.Currency.Code, Amount: m.Currency.Format(m.Amount), CompanyAmount: cur.Format(m.AmountCompany),
		})
	}
	return v
}
