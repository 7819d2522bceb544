package postgres

import (
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// companies executes company.create: a company is created once, with the
// standard chart of accounts and number series.
type companies struct{ rules dateRules }

func (companies) Commands() []string { return []string{new(ledger.CreateCompany).CommandName()} }

func (kind companies) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &companyPlan{}
	p.rules = kind.rules
	p.prepare(items, reads)
	return p
}

// companyPlan's known is the companies that exist already: its commands
// are refused for those, not for the others.
type companyPlan struct {
	commandsPlan[*ledger.CreateCompany]
}

func (p *companyPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	if err := p.begin(); err != nil {
		return nil, err
	}
	results := make([]exec.Result, len(which))
	var created []ledger.Company
	for i, at := range which {
		id, c := p.items[at].Company, p.cmds[at]
		if _, exists := p.known[id]; exists {
			e := ledger.Errorf(ledger.CodeDuplicateDocument, "company %q already exists", id)
			e.Details = map[string]any{"company": id}
			results[i].Err = e
			continue
		}
		p.known[id] = &companyBooks{country: c.Country}
		company := ledger.Company{ID: id, Name: c.Name, Country: c.Country, Currency: c.Currency, VATID: c.VATID,
			RegistrationNumber: c.RegistrationNumber}
		created = append(created, company)
		results[i].Outcome = ledger.Outcome{
			Result: struct {
				ledger.Company
				Accounts []ledger.Account `json:"accounts"`
				Series   []string         `json:"series"`
			}{company, ledger.StandardChart(), ledger.StandardSeries()},
			Events: []ledger.Event{{Type: ledger.EventCompanyCreated, Data: company}},
		}
	}
	if len(created) > 0 {
		queueCompanies(w, created)
	}
	return results, nil
}
