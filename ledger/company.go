package ledger

// CreateCompany is the body of company.create. It opens the company's books:
// chart of accounts and number series.
type CreateCompany struct {
	Name     string `json:"name"`
	Country  string `json:"country"`
	Currency string `json:"currency"`
	VATID    string `json:"vat_id"`
}

func (*CreateCompany) CommandName() string { return "company.create" }

func (c *CreateCompany) validate() *Error {
	_, curErr := currency("currency", c.Currency)
	return firstError(
		required("name", c.Name, 200),
		country("country", c.Country),
		curErr,
		maxLen("vat_id", c.VATID, 32),
	)
}

func maxLen(field, v string, max int) *Error {
	if len(v) > max {
		return invalid(field, "is longer than %d characters", max)
	}
	return nil
}

// Company is a tenant's books.
type Company struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Country  string `json:"country"`
	Currency string `json:"currency"`
	VATID    string `json:"vat_id"`
}

// AccountType classifies an account for the trial balance and statements.
type AccountType string

const (
	Asset     AccountType = "asset"
	Liability AccountType = "liability"
	Equity    AccountType = "equity"
	Revenue   AccountType = "revenue"
	Expense   AccountType = "expense"
)

// Account is one account of a company's chart.
type Account struct {
	Code string      `json:"code"`
	Name string      `json:"name"`
	Type AccountType `json:"type"`
}

// Account codes of the standard chart every company starts with.
const (
	AccountBank        = "1100"
	AccountReceivables = "1200"
	AccountInputVAT    = "1300"
	AccountPayables    = "2100"
	AccountOutputVAT   = "2300"
	AccountEquity      = "3000"
	AccountRevenue     = "4000"
	AccountExpenses    = "6000"
)

// StandardChart is the chart of accounts company.create sets up.
func StandardChart() []Account {
	return []Account{
		{AccountBank, "Bank", Asset},
		{AccountReceivables, "Accounts receivable", Asset},
		{AccountInputVAT, "Input VAT receivable", Asset},
		{AccountPayables, "Accounts payable", Liability},
		{AccountOutputVAT, "Output VAT payable", Liability},
		{AccountEquity, "Owner's equity", Equity},
		{AccountRevenue, "Sales revenue", Revenue},
		{AccountExpenses, "Operating expenses", Expense},
	}
}

// Number series every company starts with.
const (
	SeriesInvoice    = "INV"
	SeriesCreditNote = "CN"
)

// StandardSeries are the number series company.create sets up.
func StandardSeries() []string { return []string{SeriesInvoice, SeriesCreditNote} }
