package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/ledger/exec"
)

// settlements executes settlement.record: a provider's payout is recorded
// once.
type settlements struct{ rules dateRules }

func (settlements) Commands() []string { return []string{new(ledger.RecordSettlement).CommandName()} }

func (kind settlements) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &settlementPlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, providers, payouts := make([]string, len(items)), make([]string, len(items)), make([]string, len(items))
	var customers [][2]string
	var payments []paymentKey
	for i, c := range p.cmds {
		companies[i], providers[i], payouts[i] = items[i].Company, c.Provider, c.PayoutID
		for _, r := range c.RefundItems {
			if r.PaymentRef != "" {
				payments = append(payments, paymentKey{items[i].Company, r.PaymentRef})
			} else {
				customers = append(customers, [2]string{items[i].Company, r.CustomerID})
			}
		}
	}
	var fx []fxKey
	for i, c := range p.cmds {
		if k, ok := fxKeyOf(items[i].Company, c.Currency, c.PayoutDate, c.ExchangeRate); ok {
			fx = append(fx, k)
		}
	}
	p.rates = p.fxLookup(reads, fx)
	// Settlements are few: one statement reads the clearing balance of
	// each company and currency a payout in a foreign currency settles.
	p.clearing = map[fxKey]*ledger.Pooled{}
	cs, curs := make([]string, len(items)), make([]string, len(items))
	for i, c := range p.cmds {
		cs[i], curs[i] = items[i].Company, c.Currency
	}
	var k fxKey
	var open, openCo string
	p.query(reads, "provider clearing", []any{&k.company, &k.currency, &open, &openCo}, func() {
		p.clearing[k] = &ledger.Pooled{Open: dec(open), OpenCompany: dec(openCo)}
	}, `
		SELECT r.company_id, r.currency, x.open::text, x.open_company::text
		  FROM (SELECT DISTINCT r.company_id, r.currency FROM unnest($1::text[], $2::text[]) AS r(company_id, currency)
		          JOIN companies c ON c.id = r.company_id AND c.currency <> r.currency) r
		 CROSS JOIN LATERAL (
		       SELECT coalesce(sum(l.debit - l.credit), 0) AS open,
		              coalesce(sum(coalesce(l.debit_company, l.debit) - coalesce(l.credit_company, l.credit)), 0) AS open_company
		         FROM journal_lines l
		        WHERE l.company_id = r.company_id AND l.account_code = '1250' AND l.currency = r.currency) x`, cs, curs)
	if len(customers)+len(payments) > 0 {
		p.credits = p.plan.credits(reads, customers, payments)
	}
	p.payouts = p.existing(reads, "look up settlements", `
		SELECT r.company_id, r.provider, r.payout_id, s.id, s.provider || ' ' || s.payout_id
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, provider, payout_id)
		 CROSS JOIN LATERAL (SELECT id, provider, payout_id FROM settlements
		                      WHERE company_id = r.company_id AND provider = r.provider AND payout_id = r.payout_id LIMIT 1) s`,
		companies, providers, payouts)
	return p
}

type settlementPlan struct {
	commandsPlan[*ledger.RecordSettlement]
	payouts map[docKey]found // by (company, provider, payout)
	credits *creditStates    // nil when no settlement refunds anything
	rates   map[fxKey]*ledger.FXRate
	// clearing is the provider clearing balance per company and
	// currency (day unset), for payouts in another currency than the
	// company's.
	clearing map[fxKey]*ledger.Pooled
}

func (p *settlementPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var settled []*ledger.Settlement
	var companies []string
	var entries []*ledger.JournalEntry
	var moved movements
	results, err := p.each(which, func(_ int, company string, c *ledger.RecordSettlement) (exec.Result, error) {
		key := docKey{company, c.Provider, c.PayoutID}
		if prev, dup := p.payouts[key]; dup {
			return refused(duplicate("settlement", fmt.Sprintf("payout %q of %s is already recorded", c.PayoutID, c.Provider), prev))
		}
		if err := p.known[company].checkDate("payout_date", c.PayoutDate); err != nil {
			return refused(err)
		}
		conv, rerr := p.known[company].convert(p.rates, company, c.Currency, c.PayoutDate, c.ExchangeRate)
		if rerr != nil {
			return refused(rerr)
		}
		refunds, rerr := p.refunds(company, c)
		if rerr != nil {
			return refused(rerr)
		}
		k := fxKey{company: company, currency: c.Currency}
		if conv != nil && p.clearing[k] == nil {
			p.clearing[k] = &ledger.Pooled{}
		}
		st, entry := ledger.SettleProvider(company, c, refunds, conv, p.clearing[k], newID(), newID())
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post settlement %s: %w", c.PayoutID, err)
		}
		p.payouts[key] = found{st.ID, c.Provider + " " + c.PayoutID}
		settled, companies, entries = append(settled, st), append(companies, company), append(entries, entry)
		moved.add(company, st.Movements(newID)...)
		return done(ledger.EventSettlementRecorded, st.View())
	})
	if err == nil && len(settled) > 0 {
		queueEntries(w, entries)
		queueSettlements(w, companies, settled)
		moved.queue(w)
	}
	return results, err
}

// refunds checks the settlement's refunds against the credits and
// payments they name and takes them; when one is refused, none is taken.
func (p *settlementPlan) refunds(company string, c *ledger.RecordSettlement) ([]ledger.Refund, *ledger.Error) {
	cur, _ := ledger.LookupCurrency(c.Currency)
	var taken []ledger.Refund
	undo := func() {
		for _, r := range taken {
			r.Undo()
		}
	}
	for i, item := range c.RefundItems {
		var pay *ledger.PaymentCredit
		customer := item.CustomerID
		if item.PaymentRef != "" {
			var err *ledger.Error
			pay, err = p.credits.payment(company, item.PaymentRef)
			if err == nil && pay.Currency.Code != cur.Code {
				err = ledger.Errorf(ledger.CodeConflict, "refund_items[%d]: payment %q is in %s, the payout in %s", i, pay.Ref, pay.Currency.Code, cur.Code)
			}
			if err != nil {
				undo()
				return nil, err
			}
			customer = pay.CustomerID
		}
		r := ledger.NewRefund(p.credits.credit(company, p.known[company], customer, cur), pay, item.Amount.Decimal)
		if err := ledger.CheckRefund(r.Credit, r.Payment, r.Amount); err != nil {
			undo()
			err.Message = fmt.Sprintf("refund_items[%d]: %s", i, err.Message)
			return nil, err
		}
		r.Take()
		taken = append(taken, r)
	}
	return taken, nil
}

// purchases executes purchase_invoice.record: a supplier's document is
// recorded once. Its identity is (company, ledger.SupplierKey,
// ledger.DocumentKey); the lookup matches rows by the keys the database
// computes (the functions its unique index is built on), and the plan keys
// what it read and what it books by the Go keys, so a batch sees its own
// repeats. See ledger/identity.go for why both exist.
type purchases struct{ rules dateRules }

func (purchases) Commands() []string {
	return []string{new(ledger.RecordPurchaseInvoice).CommandName()}
}

func (kind purchases) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &purchasePlan{documents: map[docKey]recorded{}}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	n := len(items)
	companies, supplierKeys, documentKeys := make([]string, n), make([]string, n), make([]string, n)
	vatIDs, codes, supplierIDs, numbers := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, c := range p.cmds {
		companies[i], supplierKeys[i], documentKeys[i] = items[i].Company, ledger.SupplierKey(c.Supplier), ledger.DocumentKey(c.DocumentNumber)
		vatIDs[i], codes[i], supplierIDs[i], numbers[i] = c.Supplier.VATID, c.Supplier.Code, c.Supplier.ID, c.DocumentNumber
	}
	var fx []fxKey
	for i, c := range p.cmds {
		if k, ok := fxKeyOf(items[i].Company, c.Currency, c.IssueDate, c.ExchangeRate); ok {
			fx = append(fx, k)
		}
	}
	p.rates = p.fxLookup(reads, fx)
	var k docKey
	var f recorded
	// A database that held repeats before the identity was enforced keeps
	// them; the first record is the one named.
	p.query(reads, "look up purchase invoices", []any{&k.company, &k.a, &k.b, &f.id, &f.label, &f.key}, func() { p.documents[k] = f }, `
		SELECT r.company_id, r.supplier_key, r.document_key, d.id, d.document_number, coalesce(d.idempotency_key, '')
		  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
		       AS r(company_id, supplier_key, document_key, vat_id, code, supplier_id, document_number)
		 CROSS JOIN LATERAL (SELECT id, document_number, idempotency_key FROM purchase_invoices
		                      WHERE company_id = r.company_id
		                        AND supplier_key = purchase_supplier_key(r.vat_id, r.code, r.supplier_id)
		                        AND document_key = purchase_document_key(r.document_number)
		                      ORDER BY created_at, id LIMIT 1) d`,
		companies, supplierKeys, documentKeys, vatIDs, codes, supplierIDs, numbers)
	issued := make([]string, n)
	for i, c := range p.cmds {
		issued[i] = c.IssueDate.String()
	}
	p.near = map[docKey][]similar{}
	var s similar
	var gross string
	p.query(reads, "look up the supplier's invoices of the day", []any{&k.company, &k.a, &k.b, &s.ref.PurchaseInvoiceID, &s.ref.DocumentNumber, &s.currency, &gross},
		func() { s.gross = dec(gross); p.near[k] = append(p.near[k], s) }, `
		SELECT r.company_id, r.supplier_key, r.issue_date, d.id::text, d.document_number, d.currency, d.gross::text
		  FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
		       AS r(company_id, supplier_key, issue_date, vat_id, code, supplier_id)) r
		 CROSS JOIN LATERAL (SELECT id, document_number, currency, gross, created_at FROM purchase_invoices
		                      WHERE company_id = r.company_id
		                        AND supplier_key = purchase_supplier_key(r.vat_id, r.code, r.supplier_id)
		                        AND issue_date = r.issue_date::date
		                      ORDER BY created_at, id LIMIT 20) d
		 ORDER BY d.created_at, d.id`,
		companies, supplierKeys, issued, vatIDs, codes, supplierIDs)
	return p
}

type purchasePlan struct {
	commandsPlan[*ledger.RecordPurchaseInvoice]
	documents map[docKey]recorded // by (company, supplier key, document key)
	rates     map[fxKey]*ledger.FXRate
	// near are the supplier's invoices of an issue date, by (company,
	// supplier key, issue date), the batch's own added as they are booked.
	near map[docKey][]similar
}

// similar is a recorded purchase invoice as a near duplicate is told by.
type similar struct {
	ref      ledger.PurchaseRef
	currency string
	gross    decimal.Decimal
}

// recorded is a recorded purchase invoice and the idempotency key that
// recorded it ("" when unknown).
type recorded struct {
	found
	key string
}

func (p *purchasePlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var booked []*ledger.PurchaseInvoice
	var companies, keys []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(at int, company string, c *ledger.RecordPurchaseInvoice) (exec.Result, error) {
		key := docKey{company, ledger.SupplierKey(c.Supplier), ledger.DocumentKey(c.DocumentNumber)}
		if prev, dup := p.documents[key]; dup {
			return refused(recordedWith(duplicate("purchase_invoice",
				fmt.Sprintf("invoice %q of %s is already recorded", c.DocumentNumber, supplierName(c.Supplier)), prev.found), prev.key))
		}
		books := p.known[company]
		registered := c.Registration(books.books)
		conv, err := books.admit(p.rates, company, c.Currency, "registration_date", registered, c.IssueDate, c.ExchangeRate, c)
		if err != nil {
			return refused(err)
		}
		pi, entry := ledger.BookPurchase(company, c, registered, conv, newID(), newID())
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post purchase invoice %s: %w", c.DocumentNumber, err)
		}
		day := docKey{company, key.a, c.IssueDate.String()}
		for _, s := range p.near[day] {
			if s.currency == pi.Currency.Code && s.gross.Equal(pi.Totals.Gross) {
				pi.NearDuplicates = append(pi.NearDuplicates, s.ref)
			}
		}
		p.near[day] = append(p.near[day], similar{ledger.PurchaseRef{PurchaseInvoiceID: pi.ID.String(), DocumentNumber: c.DocumentNumber}, pi.Currency.Code, pi.Totals.Gross})
		p.documents[key] = recorded{found{pi.ID, c.DocumentNumber}, p.items[at].Key}
		booked, companies, keys, entries = append(booked, pi), append(companies, company), append(keys, p.items[at].Key), append(entries, entry)
		return done(ledger.EventPurchaseInvoiceRecorded, pi.View())
	})
	if err == nil && len(booked) > 0 {
		queueEntries(w, entries)
		queuePurchases(w, companies, keys, booked)
	}
	return results, err
}

// supplierName names a supplier in errors by what identifies it.
func supplierName(s ledger.Supplier) string {
	switch k := ledger.SupplierKey(s); {
	case strings.HasPrefix(k, "vat:"):
		return fmt.Sprintf("the supplier with VAT id %q", s.VATID)
	case strings.HasPrefix(k, "code:"):
		return fmt.Sprintf("the supplier with code %q", s.Code)
	}
	return fmt.Sprintf("supplier %q", s.ID)
}

// assets executes asset.register: an asset reference is registered once.
// Registering posts nothing.
type assets struct{ rules dateRules }

func (assets) Commands() []string { return []string{new(ledger.RegisterAsset).CommandName()} }

func (kind assets) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &assetPlan{}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, refs := make([]string, len(items)), make([]string, len(items))
	for i, c := range p.cmds {
		companies[i], refs[i] = items[i].Company, c.AssetID
	}
	p.refs = p.existing(reads, "look up assets", `
		SELECT r.company_id, r.asset_ref, '', a.id, a.asset_ref
		  FROM unnest($1::text[], $2::text[]) AS r(company_id, asset_ref)
		 CROSS JOIN LATERAL (SELECT id, asset_ref FROM assets
		                      WHERE company_id = r.company_id AND asset_ref = r.asset_ref LIMIT 1) a`, companies, refs)
	var lineCompanies, invoices []string
	var lineNos []int32
	for i, c := range p.cmds {
		if c.Purchase != nil {
			lineCompanies, invoices, lineNos = append(lineCompanies, items[i].Company), append(invoices, c.Purchase.PurchaseInvoiceID), append(lineNos, int32(c.Purchase.LineNo))
		}
	}
	p.lines = map[purchaseLineKey]*boughtOn{}
	if len(invoices) > 0 {
		var k purchaseLineKey
		var b boughtOn
		var net, linked string
		p.query(reads, "look up the purchase lines assets were bought on", []any{&k.company, &k.invoice, &k.line, &b.currency, &net, &linked},
			func() { b.net, b.linked = dec(net), dec(linked); line := b; p.lines[k] = &line }, `
			SELECT r.company_id, r.purchase_invoice_id, r.line_no, d.currency, l.net::text,
			       (SELECT coalesce(sum(a.cost), 0)::text FROM assets a
			         WHERE a.purchase_invoice_id = l.purchase_invoice_id AND a.purchase_line_no = l.line_no AND a.currency = d.currency)
			  FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[], $3::int[]) AS r(company_id, purchase_invoice_id, line_no)) r
			  JOIN purchase_invoices d ON d.company_id = r.company_id AND d.id = r.purchase_invoice_id::uuid
			  JOIN purchase_invoice_lines l ON l.purchase_invoice_id = d.id AND l.line_no = r.line_no`,
			lineCompanies, invoices, lineNos)
	}
	return p
}

type assetPlan struct {
	commandsPlan[*ledger.RegisterAsset]
	refs  map[docKey]found // by (company, asset ref)
	lines map[purchaseLineKey]*boughtOn
}

// purchaseLineKey is a company's purchase invoice line.
type purchaseLineKey struct {
	company, invoice string
	line             int32
}

// boughtOn is a purchase invoice line assets are bought on: its currency
// and net, and the cost of the assets of that currency already on it.
type boughtOn struct {
	currency    string
	net, linked decimal.Decimal
}

// linkPurchase checks the purchase line an asset names: it exists in the
// company, and the assets on it, in its currency, cost no more than its
// net. An asset kept in another currency than its purchase's is not added
// up against the line.
func (p *assetPlan) linkPurchase(company string, c *ledger.RegisterAsset) (*boughtOn, *ledger.Error) {
	if c.Purchase == nil {
		return nil, nil
	}
	ref := c.Purchase
	line := p.lines[purchaseLineKey{company, ref.PurchaseInvoiceID, int32(ref.LineNo)}]
	if line == nil {
		e := ledger.Errorf(ledger.CodeNotFound, "purchase invoice %s of company %q has no line %d", ref.PurchaseInvoiceID, company, ref.LineNo)
		e.Details = map[string]any{"purchase_invoice_id": ref.PurchaseInvoiceID, "line_no": ref.LineNo}
		return nil, e
	}
	if line.currency == c.Currency {
		if total := line.linked.Add(c.Cost.Decimal); total.GreaterThan(line.net) {
			cur, _ := ledger.LookupCurrency(c.Currency)
			e := ledger.Errorf(ledger.CodeConflict, "line %d of purchase invoice %s nets %s %s; its assets would cost %s",
				ref.LineNo, ref.PurchaseInvoiceID, cur.Format(line.net), c.Currency, cur.Format(total))
			e.Details = map[string]any{"purchase_invoice_id": ref.PurchaseInvoiceID, "line_no": ref.LineNo,
				"line_net": cur.Format(line.net), "assets_cost": cur.Format(line.linked)}
			return nil, e
		}
	}
	return line, nil
}

func (p *assetPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var registered []*ledger.Asset
	var companies []string
	results, err := p.each(which, func(_ int, company string, c *ledger.RegisterAsset) (exec.Result, error) {
		key := docKey{company: company, a: c.AssetID}
		if prev, dup := p.refs[key]; dup {
			return refused(duplicate("asset", fmt.Sprintf("asset %q is already registered", c.AssetID), prev))
		}
		line, e := p.linkPurchase(company, c)
		if e != nil {
			return refused(e)
		}
		cur, _ := ledger.LookupCurrency(c.Currency)
		a := &ledger.Asset{
			ID: newID(), Ref: c.AssetID, Description: c.Description, AcquisitionDate: c.AcquisitionDate,
			Currency: cur, Cost: c.Cost.Decimal, ResidualValue: c.ResidualValue.Decimal, UsefulLifeMonths: c.UsefulLifeMonths,
			InUseDate: c.InUse(), Start: c.Start(), Purchase: c.Purchase,
		}
		if line != nil && line.currency == c.Currency {
			line.linked = line.linked.Add(a.Cost)
		}
		p.refs[key] = found{a.ID, a.Ref}
		registered, companies = append(registered, a), append(companies, company)
		return done(ledger.EventAssetRegistered, a.View())
	})
	if err == nil && len(registered) > 0 {
		queueAssets(w, companies, registered)
	}
	return results, err
}

// depreciations executes depreciation.run: a registered asset is
// depreciated once per month, within its useful life.
type depreciations struct{ rules dateRules }

func (depreciations) Commands() []string { return []string{new(ledger.RunDepreciation).CommandName()} }

func (kind depreciations) Prepare(items []exec.Item, reads *pgx.Batch) exec.Plan {
	p := &depreciationPlan{assets: map[docKey]*ledger.Asset{}}
	p.rules = kind.rules
	if !p.prepare(items, reads) {
		return p
	}
	companies, refs, periods := make([]string, len(items)), make([]string, len(items)), make([]string, len(items))
	for i, c := range p.cmds {
		period, _ := ledger.ParsePeriod(c.Period)
		companies[i], refs[i], periods[i] = items[i].Company, c.AssetID, period.String()
	}
	var company, cur, cost, residual, start string
	var a ledger.Asset
	p.query(reads, "look up assets", []any{&company, &a.Ref, &a.ID, &a.Description, &a.AcquisitionDate.Time, &cur, &cost, &residual, &a.UsefulLifeMonths, &start}, func() {
		asset := a
		asset.Start, _ = ledger.ParsePeriod(start) // zero for an asset registered before starts were kept
		asset.Currency, _ = ledger.LookupCurrency(cur)
		asset.Cost, asset.ResidualValue = dec(cost), dec(residual)
		p.assets[docKey{company: company, a: asset.Ref}] = &asset
	}, `
		SELECT r.company_id, r.asset_ref, a.id, a.description, a.acquisition_date, a.currency, a.cost::text, a.residual_value::text, a.useful_life_months,
		       coalesce(to_char(a.first_period, 'YYYY-MM'), '')
		  FROM (SELECT DISTINCT * FROM unnest($1::text[], $2::text[]) AS r(company_id, asset_ref)) r
		 CROSS JOIN LATERAL (SELECT * FROM assets WHERE company_id = r.company_id AND asset_ref = r.asset_ref LIMIT 1) a`,
		companies, refs)
	p.runs = p.existing(reads, "look up depreciation runs", `
		SELECT r.company_id, r.asset_ref, r.period, d.id, to_char(d.period, 'YYYY-MM')
		  FROM unnest($1::text[], $2::text[], $3::text[]) AS r(company_id, asset_ref, period)
		 CROSS JOIN LATERAL (SELECT d.id, d.period FROM assets a JOIN depreciation_runs d ON d.asset_id = a.id
		                      WHERE a.company_id = r.company_id AND a.asset_ref = r.asset_ref
		                        AND d.period = to_date(r.period, 'YYYY-MM') LIMIT 1) d`,
		companies, refs, periods)
	return p
}

type depreciationPlan struct {
	commandsPlan[*ledger.RunDepreciation]
	assets map[docKey]*ledger.Asset // by (company, asset ref)
	runs   map[docKey]found         // by (company, asset ref, period)
}

func (p *depreciationPlan) Execute(which []int, w *pgx.Batch) ([]exec.Result, error) {
	var runs []*ledger.DepreciationRun
	var companies []string
	var entries []*ledger.JournalEntry
	results, err := p.each(which, func(_ int, company string, c *ledger.RunDepreciation) (exec.Result, error) {
		period, _ := ledger.ParsePeriod(c.Period)
		a := p.assets[docKey{company: company, a: c.AssetID}]
		if a == nil {
			e := ledger.Errorf(ledger.CodeNotFound, "asset %q is not registered for company %q", c.AssetID, company)
			e.Details = map[string]any{"asset_id": c.AssetID}
			return refused(e)
		}
		key := docKey{company, c.AssetID, period.String()}
		if prev, dup := p.runs[key]; dup {
			return refused(duplicate("depreciation_run", fmt.Sprintf("asset %q is already depreciated for %s", c.AssetID, period), prev))
		}
		if err := p.known[company].books.CheckMonth("period", period); err != nil {
			return refused(err)
		}
		run, entry, err := ledger.Depreciate(company, a, period, newID(), newID())
		if err != nil {
			return refused(err)
		}
		if err := entry.Check(); err != nil {
			return exec.Result{}, fmt.Errorf("post depreciation of %s for %s: %w", c.AssetID, period, err)
		}
		p.runs[key] = found{run.ID, period.String()}
		runs, companies, entries = append(runs, run), append(companies, company), append(entries, entry)
		return done(ledger.EventDepreciationPosted, run.View())
	})
	if err == nil && len(runs) > 0 {
		queueEntries(w, entries)
		queueDepreciationRuns(w, companies, runs)
	}
	return results, err
}
