package ledger

import (
	"sort"

	"github.com/shopspring/decimal"
)

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
