// Package ledger is the accounting domain: companies and their chart of
// accounts, invoices, credit notes, payments, settlements, purchase
// invoices, fixed assets and their depreciation, VAT, number series, and
// the reports built from them (trial balance, account ledger, VAT return,
// i.SAF register). It knows nothing of NATS, HTTP or SQL: commands arrive
// decoded (Decode), documents leave as values, and the storage edge
// (ledger/postgres, webhooks) turns rows into these values and back.
//
// Rules every function here keeps, and the database enforces again:
//
//   - Double entry: every JournalEntry has at least two lines, each line is
//     one-sided and positive, and debits equal credits per currency
//     (JournalEntry.Check). A document and its entry are built together, by
//     one function (IssueInvoice, IssueCreditNote, ApplyPayment,
//     SettleProvider, BookPurchase, Depreciate), so their amounts agree.
//   - Money is decimal.Decimal, never float: amounts are parsed from decimal
//     strings (Decimal), rounded half up to the currency's minor unit per
//     line, and VAT is computed per line and summed per rate (Totals).
//     Results and events carry exactly the currency's minor-unit digits.
//   - VAT rates are those of the company's country in force on the
//     document's issue date (CheckVATRates, one table of dated periods in
//     vatrate.go that also holds Lithuania's i.SAF codes). Decode
//     cannot know the company, so the storage edge applies the rule when it
//     executes a document, before allocating its number; company.create
//     accepts only a country with a table. The database does not check
//     rates.
//   - Every line carries a VAT treatment (VATTreatment): stated, or
//     inferred with the rates from its rate and counterparty where that is
//     unambiguous, else refused. It picks the line's i.SAF code and FR0600
//     fields; a reverse-charged purchase line's VAT is posted as both input
//     and output VAT (BookPurchase). The database checks only the
//     treatment's name.
//   - Immutability: nothing posted changes. A correction is a new document
//     (a credit note) that refers to the one it corrects; a credit never
//     takes more than is left of an invoice, per line and per VAT rate
//     (PlanCredit), and a payment never more than is open (ApplyPayment).
//   - Numbers are gapless per company and series (FormatNumber): the caller
//     allocates the sequence in the transaction that posts the document, so
//     a document that is not posted burns no number.
//   - Business uniqueness (one invoice per order, one payment per
//     reference, one settlement per payout, one purchase invoice per
//     supplier document, one depreciation per asset and month) is reported
//     as duplicate_document naming the existing document, whatever
//     idempotency key the second attempt carried.
//
// Errors a command's sender sees are *Error values with a Code from a
// small, append-only set (the codes cross boundaries: results, webhook
// bodies, database columns). Every other error is a fault of the machine,
// not of the command, and is retried.
package ledger
