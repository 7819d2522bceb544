package ledger

// CreateCompany is the body of company.create. It opens the company's books:
// chart of accounts and number series.
type CreateCompany struct {
	Name     string `json:"name"`
	Country  string `json:"country"`
	Currency string `json:"currency"`
	VATID    string `json:"vat_id"`
	// RegistrationNumber is the company's registration code (in Lithuania
	// the juridinio asmens kodas), digits only: the i.SAF register names
	// the company by it. Optional, but a company without one gets no
	// i.SAF file. It is set at creation only.
	RegistrationNumber string `json:"registration_number,omitempty"`
}

func (*CreateCompany) CommandName() string { return "company.create" }

func (c *CreateCompany) validate() *Error {
	_, curErr := currency("currency", c.Currency)
	return firstError(
		required("name", c.Name, 200),
		companyCountry("country", c.Country),
		curErr,
		maxLen("vat_id", c.VATID, 32),
		registrationNumber("registration_number", c.Country, c.RegistrationNumber),
	)
}

// registrationNumber checks a company's registration code: digits only,
// 7 to 9 of them for a Lithuanian company (the register's codes are 9
// digits; companies registered before 2004 may keep a 7-digit one), at
// most 11 elsewhere (what the i.SAF header holds).
func registrationNumber(field, country, v string) *Error {
	if v == "" {
		return nil
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return invalid(field, "must be digits only (the company code, not the VAT id)")
		}
	}
	min, max := 1, 11
	if country == "LT" {
		min, max = 7, 9
	}
	if len(v) < min || len(v) > max {
		if min == max {
			return invalid(field, "must be %d digits", min)
		}
		return invalid(field, "must be %d to %d digits", min, max)
	}
	return nil
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
	// RegistrationNumber is the company code, "" when not given.
	RegistrationNumber string `json:"registration_number"`
}

// AccountType classifies an account for the trial balance and statements.
type AccountType string

const (
	TypeAsset     AccountType = "asset"
	TypeLiability AccountType = "liability"
	TypeEquity    AccountType = "equity"
	TypeRevenue   AccountType = "revenue"
	TypeExpense   AccountType = "expense"
)

// Account is one account of a company's chart.
type Account struct {
	Code string      `json:"code"`
	Name string      `json:"name"`
	Type AccountType `json:"type"`
}

// Account codes of the standard chart every company starts with.
const (
	AccountBank                    = "1100"
	AccountReceivables             = "1200"
	AccountProviderClearing        = "1250"
	AccountInputVAT                = "1300"
	AccountSupplierCredits         = "1400"
	AccountFixedAssets             = "1500"
	AccountAccumulatedDepreciation = "1590"
	AccountPayables                = "2100"
	AccountCustomerCredits         = "2200"
	AccountOutputVAT               = "2300"
	AccountEquity                  = "3000"
	AccountRetainedEarnings        = "3400"
	AccountRevenue                 = "4000"
	AccountExchangeGains           = "4900"
	AccountExpenses                = "6000"
	AccountProviderFees            = "6100"
	AccountDepreciation            = "6800"
	AccountExchangeLosses          = "6900"
)

// StandardChart is the chart of accounts company.create sets up.
func StandardChart() []Account {
	return []Account{
		{AccountBank, "Bank", TypeAsset},
		{AccountReceivables, "Accounts receivable", TypeAsset},
		{AccountProviderClearing, "Payment provider clearing", TypeAsset},
		{AccountInputVAT, "Input VAT receivable", TypeAsset},
		{AccountSupplierCredits, "Supplier credits", TypeAsset},
		{AccountFixedAssets, "Fixed assets", TypeAsset},
		{AccountAccumulatedDepreciation, "Accumulated depreciation", TypeAsset},
		{AccountPayables, "Accounts payable", TypeLiability},
		{AccountCustomerCredits, "Customer credits", TypeLiability},
		{AccountOutputVAT, "Output VAT payable", TypeLiability},
		{AccountEquity, "Owner's equity", TypeEquity},
		{AccountRetainedEarnings, "Retained earnings", TypeEquity},
		{AccountRevenue, "Sales revenue", TypeRevenue},
		{AccountExchangeGains, "Realised exchange gains", TypeRevenue},
		{AccountExpenses, "Operating expenses", TypeExpense},
		{AccountProviderFees, "Payment provider fees", TypeExpense},
		{AccountDepreciation, "Depreciation expense", TypeExpense},
		{AccountExchangeLosses, "Realised exchange losses", TypeExpense},
	}
}

// Number series every company starts with.
const (
	SeriesInvoice    = "INV"
	SeriesCreditNote = "CN"
)

// StandardSeries are the number series company.create sets up.
func StandardSeries() []string { return []string{SeriesInvoice, SeriesCreditNote} }
