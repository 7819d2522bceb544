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
	var lineCompanies, accounts, currencies, debits, credits []string
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
		}
	}
	batch.Queue(`
		INSERT INTO journal_entries (id, company_id, entry_date, description, source_type, source_id)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::date[], $4::text[], $5::text[], $6::uuid[])`,
		ids, companies, dates, descriptions, sourceTypes, sources)
	batch.Queue(`
		INSERT INTO journal_lines (entry_id, line_no, company_id, account_code, currency, debit, credit)
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[]::numeric[], $7::text[]::numeric[])`,
		lineEntries, lineNos, lineCompanies, accounts, currencies, debits, credits)
}

// queueInvoices queues the invoices and all their lines; each invoice's
// journal entry is queued by queueEntries.
func queueInvoices(batch *pgx.Batch, invs []*ledger.Invoice) {
	n := len(invs)
	ids, entries := make([][16]byte, 0, n), make([][16]byte, 0, n)
	companies, series, numbers, orders := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	custIDs, custNames, custVATs, custCountries := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	currencies, nets, vats, grosses := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	sequences := make([]int64, 0, n)
	issued, due := make([]time.Time, 0, n), make([]time.Time, 0, n)
	var lineInvoices [][16]byte
	var lineNos []int32
	var lineDescs, lineQty, linePrice, lineRate, lineNet, lineVAT, lineGross []string
	for _, inv := range invs {
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
			lineNet = append(lineNet, a.Net.String())
			lineVAT = append(lineVAT, a.VAT.String())
			lineGross = append(lineGross, a.Gross.String())
		}
	}
	batch.Queue(`
		INSERT INTO invoices (id, company_id, series, sequence, number, order_id,
			customer_id, customer_name, customer_vat_id, customer_country,
			currency, issue_date, due_date, net, vat, gross, journal_entry_id)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[],
			$7::text[], $8::text[], $9::text[], $10::text[],
			$11::text[], $12::date[], $13::date[], $14::text[]::numeric[], $15::text[]::numeric[], $16::text[]::numeric[], $17::uuid[])`,
		ids, companies, series, sequences, numbers, orders,
		custIDs, custNames, custVATs, custCountries,
		currencies, issued, due, nets, vats, grosses, entries)
	batch.Queue(`
		INSERT INTO invoice_lines (invoice_id, line_no, description, quantity, unit_price, vat_rate, net, vat, gross)
		SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[]::numeric[], $5::text[]::numeric[], $6::text[]::numeric[],
			$7::text[]::numeric[], $8::text[]::numeric[], $9::text[]::numeric[])`,
		lineInvoices, lineNos, lineDescs, lineQty, linePrice, lineRate, lineNet, lineVAT, lineGross)
}
