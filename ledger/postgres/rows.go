package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/ledger"
)

// UUIDs travel as [16]byte: pgx encodes those directly, where a
// uuid.UUID element goes through its driver.Valuer as text. Amounts travel
// as their decimal text in text[] parameters, cast to numeric[] by the
// statement: pgx has no binary encoding of a string as numeric, and for a
// numeric[] parameter it would fail to find one, build the error, and only
// then encode the array as text, on every statement.
//
// The writers below queue one INSERT per table, whatever the number of
// rows: the rows travel as arrays and unnest into the table, so a batch of
// documents costs a statement (and a statement-level trigger call) per
// table, not per row.

// queueEntries queues the journal entries and all their lines.
func queueEntries(batch *pgx.Batch, entries []*ledger.JournalEntry) {
	n := len(entries)
	ids, sources := make([][16]byte, 0, n), make([][16]byte, 0, n)
	companies, descriptions, sourceTypes := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	dates := make([]time.Time, 0, n)
	var lineEntries [][16]byte
	var lineNos []int32
	var lineCompanies, accounts, currencies, debits, credits, debitsCo, creditsCo []string
	for _, e := range entries {
		ids = append(ids, e.ID)
		companies = append(companies, e.Company)
		dates = append(dates, e.Date.Time)
		descriptions = append(descriptions, e.Description)
		sourceTypes = append(sourceTypes, e.SourceType)
		sources = append(sources, e.SourceID)
		for i, l := range e.Lines {
			lineEntries = append(lineEntries, e.ID)
			lineNos = append(lineNos, int32(i+1))
			lineCompanies = append(lineCompanies, e.Company)
			accounts = append(accounts, l.Account)
			currencies = append(currencies, l.Currency)
			debits = append(debits, l.Debit.String())
			credits = append(credits, l.Credit.String())
			debitsCo = append(debitsCo, l.CompanyDebit.String())
			creditsCo = append(creditsCo, l.CompanyCredit.String())
		}
	}
	batch.Queue(`
		INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::date[], $4::text[], $5::text[], $6::uuid[])`,
		ids, companies, dates, descriptions, sourceTypes, sources)
	batch.Queue(`
		INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit, debit_company, credit_company)
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[]::numeric[], $7::text[]::numeric[],
		                     $8::text[]::numeric[], $9::text[]::numeric[])`,
		lineEntries, lineNos, lineCompanies, accounts, currencies, debits, credits, debitsCo, creditsCo)
}

// queueInvoices queues the invoices and all their lines; each invoice's
// journal entry is queued by queueEntries.
func queueInvoices(batch *pgx.Batch, invs []*ledger.Invoice) {
	n := len(invs)
	ids, entries := make([][16]byte, 0, n), make([][16]byte, 0, n)
	companies, series, numbers, orders := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	custIDs, custNames, custVATs, custCountries := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	custCodes := make([]string, 0, n)
	currencies, nets, vats, grosses := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	sequences := make([]int64, 0, n)
	issued, due := make([]time.Time, 0, n), make([]time.Time, 0, n)
	var lineInvoices [][16]byte
	var lineNos []int32
	var lineDescs, lineQty, linePrice, lineRate, lineNet, lineVAT, lineGross, lineNetCo, lineVATCo, lineTreatments []string
	var fxRates, fxSources, fxDates []string
	for _, inv := range invs {
		rate, source, day := conversionColumns(inv.Conversion)
		fxRates, fxSources, fxDates = append(fxRates, rate), append(fxSources, source), append(fxDates, day)
		ids = append(ids, inv.ID)
		companies = append(companies, inv.Company)
		series = append(series, inv.Series)
		sequences = append(sequences, inv.Sequence)
		numbers = append(numbers, inv.Number)
		orders = append(orders, inv.OrderID)
		custIDs = append(custIDs, inv.Customer.ID)
		custNames = append(custNames, inv.Customer.Name)
		custVATs = append(custVATs, inv.Customer.VATID)
		custCountries = append(custCountries, inv.Customer.Country)
		custCodes = append(custCodes, inv.Customer.Code)
		currencies = append(currencies, inv.Currency.Code)
		issued = append(issued, inv.IssueDate.Time)
		due = append(due, inv.DueDate.Time)
		nets = append(nets, inv.Totals.Net.String())
		vats = append(vats, inv.Totals.VAT.String())
		grosses = append(grosses, inv.Totals.Gross.String())
		entries = append(entries, inv.JournalEntryID)
		for i, l := range inv.Lines {
			a := inv.Totals.Lines[i]
			lineInvoices = append(lineInvoices, inv.ID)
			lineNos = append(lineNos, int32(i+1))
			lineDescs = append(lineDescs, l.Description)
			lineQty = append(lineQty, l.Quantity.String())
			linePrice = append(linePrice, l.UnitPrice.String())
			lineRate = append(lineRate, l.VATRate.String())
			lineTreatments = append(lineTreatments, string(l.VATTreatment))
			lineNet = append(lineNet, a.Net.String())
			lineVAT = append(lineVAT, a.VAT.String())
			lineGross = append(lineGross, a.Gross.String())
			co := inv.Converted.Lines[i]
			lineNetCo, lineVATCo = append(lineNetCo, co.Net.String()), append(lineVATCo, co.VAT.String())
		}
	}
	batch.Queue(`
		INSERT INTO invoices (id, company_id, series, sequence, number, order_id,
			customer_id, customer_name, customer_vat_id, customer_country,
			currency, issue_date, due_date, net, vat, gross, journal_entry_id, exchange_rate, rate_source, rate_date, customer_code)
		SELECT id, company_id, series, sequence, number, order_id, customer_id, customer_name, customer_vat_id, customer_country,
		       currency, issue_date, due_date, net, vat, gross, journal_entry_id,
		       nullif(exchange_rate, '')::numeric, nullif(rate_source, ''), nullif(rate_date, '')::date, customer_code
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::text[], $10::text[],
			$11::text[], $12::date[], $13::date[], $14::text[]::numeric[], $15::text[]::numeric[], $16::text[]::numeric[], $17::uuid[],
			$18::text[], $19::text[], $20::text[], $21::text[])
		       AS t(id, company_id, series, sequence, number, order_id, customer_id, customer_name, customer_vat_id, customer_country,
		            currency, issue_date, due_date, net, vat, gross, journal_entry_id, exchange_rate, rate_source, rate_date, customer_code)`,
		ids, companies, series, sequences, numbers, orders,
		custIDs, custNames, custVATs, custCountries,
		currencies, issued, due, nets, vats, grosses, entries, fxRates, fxSources, fxDates, custCodes)
	batch.Queue(`
		INSERT INTO invoice_lines (invoice_id, line_no, description, quantity, unit_price, vat_rate, net, vat, gross, net_company, vat_company,
			vat_treatment)
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[]::numeric[], $5::text[]::numeric[], $6::text[]::numeric[],
			$7::text[]::numeric[], $8::text[]::numeric[], $9::text[]::numeric[], $10::text[]::numeric[], $11::text[]::numeric[], $12::text[])`,
		lineInvoices, lineNos, lineDescs, lineQty, linePrice, lineRate, lineNet, lineVAT, lineGross, lineNetCo, lineVATCo, lineTreatments)
}

// conversionColumns are a document's conversion as text columns, empty
// (NULL) for a document in the company's currency.
func conversionColumns(c *ledger.Conversion) (rate, source, day string) {
	if c == nil {
		return "", "", ""
	}
	return c.Rate.String(), c.Source, c.Date.String()
}

// queueCompanies queues the companies with their standard chart of
// accounts and number series.
func queueCompanies(batch *pgx.Batch, cs []ledger.Company) {
	var ids, names, countries, currencies, vatIDs, regNumbers []string
	var accCompanies, codes, accNames, types []string
	var seriesCompanies, series []string
	for _, c := range cs {
		ids, names, countries, currencies, vatIDs = append(ids, c.ID), append(names, c.Name), append(countries, c.Country), append(currencies, c.Currency), append(vatIDs, c.VATID)
		regNumbers = append(regNumbers, c.RegistrationNumber)
		for _, a := range ledger.StandardChart() {
			accCompanies, codes, accNames, types = append(accCompanies, c.ID), append(codes, a.Code), append(accNames, a.Name), append(types, string(a.Type))
		}
		for _, s := range ledger.StandardSeries() {
			seriesCompanies, series = append(seriesCompanies, c.ID), append(series, s)
		}
	}
	batch.Queue(`
		INSERT INTO companies (id, name, country, currency, vat_id, registration_number)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
		ids, names, countries, currencies, vatIDs, regNumbers)
	batch.Queue(`
		INSERT INTO accounts (company_id, code, name, type)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])`,
		accCompanies, codes, accNames, types)
	batch.Queue(`
		INSERT INTO number_series (company_id, series)
		SELECT * FROM unnest($1::text[], $2::text[])`, seriesCompanies, series)
}

// queueCreditNotes queues the credit notes and their lines; each note's
// journal entry is queued by queueEntries.
func queueCreditNotes(batch *pgx.Batch, notes []*ledger.CreditNote) {
	var ids, invoices, entries [][16]byte
	var companies, series, numbers, reasons, currencies, nets, vats, grosses, receivables []string
	var sequences []int64
	var issued []time.Time
	var lineNotes [][16]byte
	var lineNos []int32
	var invoiceLines []*int32
	var descs, rates, lineNets, lineVATs, lineGrosses, lineNetsCo, lineVATsCo, treatments []string
	var qtys, prices []*string
	for _, cn := range notes {
		ids, invoices, entries = append(ids, cn.ID), append(invoices, cn.Invoice.ID), append(entries, cn.JournalEntryID)
		companies, series, numbers, reasons = append(companies, cn.Company), append(series, cn.Series), append(numbers, cn.Number), append(reasons, cn.Reason)
		currencies, nets, vats, grosses = append(currencies, cn.Invoice.Currency.Code), append(nets, cn.Net.String()), append(vats, cn.VAT.String()), append(grosses, cn.Gross().String())
		sequences, issued = append(sequences, cn.Sequence), append(issued, cn.IssueDate.Time)
		receivables = append(receivables, cn.ReceivableCompany.String())
		for i, l := range cn.Lines {
			lineNotes, lineNos = append(lineNotes, cn.ID), append(lineNos, int32(i+1))
			var invLine *int32
			if l.InvoiceLine > 0 {
				n := int32(l.InvoiceLine)
				invLine = &n
			}
			var qty, price *string
			if l.Quantity.Valid {
				q, p := l.Quantity.Decimal.String(), l.UnitPrice.Decimal.String()
				qty, price = &q, &p
			}
			invoiceLines, qtys, prices = append(invoiceLines, invLine), append(qtys, qty), append(prices, price)
			descs, rates = append(descs, l.Description), append(rates, l.VATRate.String())
			treatments = append(treatments, string(l.VATTreatment))
			lineNets, lineVATs, lineGrosses = append(lineNets, l.Net.String()), append(lineVATs, l.VAT.String()), append(lineGrosses, l.Net.Add(l.VAT).String())
			co := cn.Converted.Lines[i]
			lineNetsCo, lineVATsCo = append(lineNetsCo, co.Net.String()), append(lineVATsCo, co.VAT.String())
		}
	}
	batch.Queue(`
		INSERT INTO credit_notes (id, company_id, series, sequence, number, invoice_id, issue_date, reason,
			currency, net, vat, gross, journal_entry_id, receivable_company)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::uuid[], $7::date[], $8::text[],
			$9::text[], $10::text[]::numeric[], $11::text[]::numeric[], $12::text[]::numeric[], $13::uuid[], $14::text[]::numeric[])`,
		ids, companies, series, sequences, numbers, invoices, issued, reasons, currencies, nets, vats, grosses, entries, receivables)
	batch.Queue(`
		INSERT INTO credit_note_lines (credit_note_id, line_no, invoice_line_no, description, quantity, unit_price, vat_rate, net, vat, gross,
			net_company, vat_company, vat_treatment)
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::text[], $5::text[]::numeric[], $6::text[]::numeric[],
			$7::text[]::numeric[], $8::text[]::numeric[], $9::text[]::numeric[], $10::text[]::numeric[], $11::text[]::numeric[], $12::text[]::numeric[],
			$13::text[])`,
		lineNotes, lineNos, invoiceLines, descs, qtys, prices, rates, lineNets, lineVATs, lineGrosses, lineNetsCo, lineVATsCo, treatments)
}

// queuePayments queues the payments and their allocations; each
// payment's journal entry is queued by queueEntries.
func queuePayments(batch *pgx.Batch, ps []*ledger.Payment) {
	var ids, entries [][16]byte
	var companies, refs, customers, methods, currencies, amounts, unapplied []string
	var received []time.Time
	var allocPayments, allocInvoices, openPayments, openItems [][16]byte
	var allocAmounts, allocCompany, openAmounts, openCompany []string
	var fxRates, fxSources, fxDates []string
	for _, p := range ps {
		c := p.Command
		rate, source, day := conversionColumns(p.Conversion)
		fxRates, fxSources, fxDates = append(fxRates, rate), append(fxSources, source), append(fxDates, day)
		ids, entries = append(ids, p.ID), append(entries, p.JournalEntryID)
		companies, refs, customers, methods = append(companies, p.Company), append(refs, c.PaymentRef), append(customers, c.CustomerID), append(methods, c.Method)
		currencies, amounts, unapplied = append(currencies, p.Currency.Code), append(amounts, c.Amount.String()), append(unapplied, p.Unapplied.String())
		received = append(received, c.ReceivedOn.Time)
		for _, a := range p.Applied {
			if a.Invoice.Opening {
				openPayments, openItems, openAmounts = append(openPayments, p.ID), append(openItems, a.Invoice.ID), append(openAmounts, a.Amount.String())
				openCompany = append(openCompany, a.Company.String())
				continue
			}
			allocPayments, allocInvoices, allocAmounts = append(allocPayments, p.ID), append(allocInvoices, a.Invoice.ID), append(allocAmounts, a.Amount.String())
			allocCompany = append(allocCompany, a.Company.String())
		}
	}
	batch.Queue(`
		INSERT INTO payments (id, company_id, payment_ref, customer_id, received_on, method, currency, amount, unapplied, journal_entry_id,
			exchange_rate, rate_source, rate_date)
		SELECT id, company_id, payment_ref, customer_id, received_on, method, currency, amount, unapplied, journal_entry_id,
		       nullif(exchange_rate, '')::numeric, nullif(rate_source, ''), nullif(rate_date, '')::date
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::date[], $6::text[], $7::text[],
			$8::text[]::numeric[], $9::text[]::numeric[], $10::uuid[], $11::text[], $12::text[], $13::text[])
		       AS t(id, company_id, payment_ref, customer_id, received_on, method, currency, amount, unapplied, journal_entry_id,
		            exchange_rate, rate_source, rate_date)`,
		ids, companies, refs, customers, received, methods, currencies, amounts, unapplied, entries, fxRates, fxSources, fxDates)
	if len(allocPayments) > 0 {
		batch.Queue(`
			INSERT INTO payment_allocations (payment_id, invoice_id, amount, amount_company)
			SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]::numeric[], $4::text[]::numeric[])`,
			allocPayments, allocInvoices, allocAmounts, allocCompany)
	}
	queueOpeningAllocations(batch, "payment_id", openPayments, openItems, openAmounts, openCompany)
}

// queueSettlements queues the settlements of companies (one per
// settlement); each one's journal entry is queued by queueEntries.
func queueSettlements(batch *pgx.Batch, companies []string, sts []*ledger.Settlement) {
	var ids, entries [][16]byte
	var providers, payouts, currencies, grosses, fees, refunds, nets []string
	var dates []time.Time
	for _, st := range sts {
		c := st.Command
		ids, entries = append(ids, st.ID), append(entries, st.JournalEntryID)
		providers, payouts, currencies = append(providers, c.Provider), append(payouts, c.PayoutID), append(currencies, st.Currency.Code)
		grosses, fees, refunds, nets = append(grosses, c.Gross.String()), append(fees, c.Fees.String()), append(refunds, c.Refunds.String()), append(nets, c.Net.String())
		dates = append(dates, c.PayoutDate.Time)
	}
	batch.Queue(`
		INSERT INTO settlements (id, company_id, provider, payout_id, payout_date, currency, gross, fees, refunds, net, journal_entry_id)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::date[], $6::text[],
			$7::text[]::numeric[], $8::text[]::numeric[], $9::text[]::numeric[], $10::text[]::numeric[], $11::uuid[])`,
		ids, companies, providers, payouts, dates, currencies, grosses, fees, refunds, nets, entries)
}

// queuePurchases queues the purchase invoices and supplier credit notes
// of companies, recorded by the commands with idempotency keys keys (""
// for none), and their lines; each one's journal entry is queued by
// queueEntries. The identity keys are the table's generated columns.
func queuePurchases(batch *pgx.Batch, companies, keys []string, pis []*ledger.PurchaseInvoice) {
	var ids, entries [][16]byte
	var supIDs, supNames, supVATs, supCodes, supCountries, docs, currencies, nets, vats, grosses []string
	var issued, due, registered []time.Time
	var lineDocs [][16]byte
	var lineNos []int32
	var descs, qtys, prices, rates, accounts, lineNets, lineVATs, lineGrosses, lineNetsCo, lineVATsCo, treatments []string
	var fxRates, fxSources, fxDates, credited, reasons []string
	var creditsLines []int32
	for _, pi := range pis {
		c := pi.Command
		cr := &ledger.PurchaseCredit{}
		if pi.Credit != nil {
			cr = pi.Credit
			credited, reasons = append(credited, cr.InvoiceID.String()), append(reasons, cr.Reason)
		} else {
			credited, reasons = append(credited, ""), append(reasons, "")
		}
		rate, source, day := conversionColumns(pi.Conversion)
		fxRates, fxSources, fxDates = append(fxRates, rate), append(fxSources, source), append(fxDates, day)
		ids, entries = append(ids, pi.ID), append(entries, pi.JournalEntryID)
		supIDs, supNames, supVATs, supCountries = append(supIDs, c.Supplier.ID), append(supNames, c.Supplier.Name), append(supVATs, c.Supplier.VATID), append(supCountries, c.Supplier.Country)
		supCodes = append(supCodes, c.Supplier.Code)
		docs, currencies = append(docs, c.DocumentNumber), append(currencies, pi.Currency.Code)
		nets, vats, grosses = append(nets, pi.Totals.Net.String()), append(vats, pi.Totals.VAT.String()), append(grosses, pi.Totals.Gross.String())
		issued, due, registered = append(issued, c.IssueDate.Time), append(due, c.DueDate.Time), append(registered, pi.Registered.Time)
		for i, l := range c.Lines {
			a := pi.Totals.Lines[i]
			lineDocs, lineNos = append(lineDocs, pi.ID), append(lineNos, int32(i+1))
			descs, qtys, prices, rates, accounts = append(descs, l.Description), append(qtys, l.Quantity.String()), append(prices, l.UnitPrice.String()), append(rates, l.VATRate.String()), append(accounts, l.Account)
			treatments = append(treatments, string(l.VATTreatment))
			lineNets, lineVATs, lineGrosses = append(lineNets, a.Net.String()), append(lineVATs, a.VAT.String()), append(lineGrosses, a.Gross.String())
			co := pi.Converted.Lines[i]
			lineNetsCo, lineVATsCo = append(lineNetsCo, co.Net.String()), append(lineVATsCo, co.VAT.String())
			var creditsLine int32
			if i < len(cr.LineNos) {
				creditsLine = int32(cr.LineNos[i])
			}
			creditsLines = append(creditsLines, creditsLine)
		}
	}
	batch.Queue(`
		INSERT INTO purchase_invoices (id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
			document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id, supplier_code, idempotency_key,
			exchange_rate, rate_source, rate_date, registration_date, credits_invoice_id, reason)
		SELECT id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
		       document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id, supplier_code, NULLIF(idempotency_key, ''),
		       nullif(exchange_rate, '')::numeric, nullif(rate_source, ''), nullif(rate_date, '')::date, registration_date,
		       nullif(credits_invoice_id, '')::uuid, nullif(reason, '')
		  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			$7::text[], $8::date[], $9::date[], $10::text[], $11::text[]::numeric[], $12::text[]::numeric[], $13::text[]::numeric[], $14::uuid[],
			$15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::date[], $21::text[], $22::text[])
		       AS t(id, company_id, supplier_id, supplier_name, supplier_vat_id, supplier_country,
		            document_number, issue_date, due_date, currency, net, vat, gross, journal_entry_id, supplier_code, idempotency_key,
		            exchange_rate, rate_source, rate_date, registration_date, credits_invoice_id, reason)`,
		ids, companies, supIDs, supNames, supVATs, supCountries, docs, issued, due, currencies, nets, vats, grosses, entries, supCodes, keys,
		fxRates, fxSources, fxDates, registered, credited, reasons)
	batch.Queue(`
		INSERT INTO purchase_invoice_lines (purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross,
			net_company, vat_company, vat_treatment, credits_line_no)
		SELECT purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross,
		       net_company, vat_company, vat_treatment, nullif(credits_line_no, 0)
		  FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[]::numeric[], $5::text[]::numeric[], $6::text[]::numeric[],
			$7::text[], $8::text[]::numeric[], $9::text[]::numeric[], $10::text[]::numeric[], $11::text[]::numeric[], $12::text[]::numeric[],
			$13::text[], $14::int[])
		       AS t(purchase_invoice_id, line_no, description, quantity, unit_price, vat_rate, account_code, net, vat, gross,
		            net_company, vat_company, vat_treatment, credits_line_no)`,
		lineDocs, lineNos, descs, qtys, prices, rates, accounts, lineNets, lineVATs, lineGrosses, lineNetsCo, lineVATsCo, treatments, creditsLines)
}

// queueAssets queues the assets of companies.
func queueAssets(batch *pgx.Batch, companies []string, as []*ledger.Asset) {
	var ids [][16]byte
	var refs, descs, currencies, costs, residuals []string
	var acquired, inUse, starts []time.Time
	var lives []int32
	var invoices []*string
	var lines []*int32
	for _, a := range as {
		if a.Purchase != nil {
			line := int32(a.Purchase.LineNo)
			invoices, lines = append(invoices, &a.Purchase.PurchaseInvoiceID), append(lines, &line)
		} else {
			invoices, lines = append(invoices, nil), append(lines, nil)
		}
		inUse, starts = append(inUse, a.InUseDate.Time), append(starts, a.Start.First().Time)
		ids, refs, descs, currencies = append(ids, a.ID), append(refs, a.Ref), append(descs, a.Description), append(currencies, a.Currency.Code)
		costs, residuals = append(costs, a.Cost.String()), append(residuals, a.ResidualValue.String())
		acquired, lives = append(acquired, a.AcquisitionDate.Time), append(lives, int32(a.UsefulLifeMonths))
	}
	batch.Queue(`
		INSERT INTO assets (id, company_id, asset_ref, description, acquisition_date, currency, cost, residual_value, useful_life_months,
			in_use_date, first_period, purchase_invoice_id, purchase_line_no)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::date[], $6::text[],
			$7::text[]::numeric[], $8::text[]::numeric[], $9::int[], $10::date[], $11::date[], $12::text[]::uuid[], $13::int[])`,
		ids, companies, refs, descs, acquired, currencies, costs, residuals, lives, inUse, starts, invoices, lines)
}

// queueDepreciationRuns queues the runs of companies; each run's journal
// entry is queued by queueEntries.
func queueDepreciationRuns(batch *pgx.Batch, companies []string, runs []*ledger.DepreciationRun) {
	var ids, assets, entries [][16]byte
	var periods []time.Time
	var amounts []string
	for _, r := range runs {
		ids, assets, entries = append(ids, r.ID), append(assets, r.Asset.ID), append(entries, r.JournalEntryID)
		periods, amounts = append(periods, r.Period.First().Time), append(amounts, r.Amount.String())
	}
	batch.Queue(`
		INSERT INTO depreciation_runs (id, company_id, asset_id, period, amount, journal_entry_id)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::date[], $5::text[]::numeric[], $6::uuid[])`,
		ids, companies, assets, periods, amounts, entries)
}
