package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceledger/onceledger/ledger"
)

// SQLSTATE codes this package branches on.
const (
	sqlstateUniqueViolation = "23505"
)

// Store executes ledger commands in a caller-supplied transaction.
type Store struct{}

// New returns a Store.
func New() *Store { return &Store{} }

// Execute applies cmd for company in tx. A business rule violation is
// returned as *ledger.Error and leaves tx usable only if the caller wrapped the
// call in a savepoint; any other error is transient and the caller must roll
// back.
func (s *Store) Execute(ctx context.Context, tx pgx.Tx, company string, cmd ledger.Command) (ledger.Outcome, error) {
	switch c := cmd.(type) {
	case *ledger.CreateCompany:
		return s.createCompany(ctx, tx, company, c)
	case *ledger.CreateInvoice:
		return s.createInvoice(ctx, tx, company, c)
	case *ledger.CreateCreditNote:
		return s.createCreditNote(ctx, tx, company, c)
	case *ledger.RecordPayment:
		return s.recordPayment(ctx, tx, company, c)
	case *ledger.RecordSettlement:
		return s.recordSettlement(ctx, tx, company, c)
	case *ledger.RecordPurchaseInvoice:
		return s.recordPurchase(ctx, tx, company, c)
	case *ledger.RegisterAsset:
		return s.registerAsset(ctx, tx, company, c)
	case *ledger.RunDepreciation:
		return s.runDepreciation(ctx, tx, company, c)
	default:
		return ledger.Outcome{}, fmt.Errorf("ledger store: command %s is not implemented", cmd.CommandName())
	}
}

func (s *Store) createCompany(ctx context.Context, tx pgx.Tx, id string, c *ledger.CreateCompany) (ledger.Outcome, error) {
	tag, err := tx.Exec(ctx, `
		INSERT INTO companies (id, name, country, currency, vat_id) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`, id, c.Name, c.Country, c.Currency, c.VATID)
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("insert company: %w", err)
	}
	if tag.RowsAffected() == 0 {
		e := ledger.Errorf(ledger.CodeDuplicateDocument, "company %q already exists", id)
		e.Details = map[string]any{"company": id}
		return ledger.Outcome{}, e
	}
	batch := &pgx.Batch{}
	for _, a := range ledger.StandardChart() {
		batch.Queue(`INSERT INTO accounts (company_id, code, name, type) VALUES ($1, $2, $3, $4)`, id, a.Code, a.Name, string(a.Type))
	}
	for _, series := range ledger.StandardSeries() {
		batch.Queue(`INSERT INTO number_series (company_id, series) VALUES ($1, $2)`, id, series)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return ledger.Outcome{}, fmt.Errorf("set up books: %w", err)
	}
	company := ledger.Company{ID: id, Name: c.Name, Country: c.Country, Currency: c.Currency, VATID: c.VATID}
	return ledger.Outcome{
		Result: struct {
			ledger.Company
			Accounts []ledger.Account `json:"accounts"`
			Series   []string         `json:"series"`
		}{company, ledger.StandardChart(), ledger.StandardSeries()},
		Events: []ledger.Event{{Type: "company.created", Data: company}},
	}, nil
}

// companyExists refuses commands for tenants that were never created: a typo
// in a subject must not open a new set of books.
func companyExists(ctx context.Context, tx pgx.Tx, id string) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM companies WHERE id = $1)`, id).Scan(&ok); err != nil {
		return fmt.Errorf("look up company: %w", err)
	}
	if !ok {
		return unknownCompany(id)
	}
	return nil
}

func unknownCompany(id string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeUnknownCompany, "company %q does not exist; create it with company.create first", id)
	e.Details = map[string]any{"company": id}
	return e
}

func unknownSeries(company, series string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeNotFound, "number series %q does not exist for company %q", series, company)
	e.Details = map[string]any{"series": series}
	return e
}

// nextNumber allocates the next number of a series inside tx. The row lock it
// takes serialises concurrent issuers of the same series until commit.
func nextNumber(ctx context.Context, tx pgx.Tx, company, series string) (int64, error) {
	var seq int64
	err := tx.QueryRow(ctx, `
		UPDATE number_series SET last_value = last_value + 1
		 WHERE company_id = $1 AND series = $2
		RETURNING last_value`, company, series).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, unknownSeries(company, series)
	}
	if err != nil {
		return 0, fmt.Errorf("allocate number in series %s: %w", series, err)
	}
	return seq, nil
}

func (s *Store) createInvoice(ctx context.Context, tx pgx.Tx, company string, c *ledger.CreateInvoice) (ledger.Outcome, error) {
	dup := func(ctx context.Context, tx pgx.Tx) error { return invoiceForOrder(ctx, tx, company, c.OrderID) }
	// The company, the order's earlier invoice and the next number, in one
	// round trip. The duplicate check may run before a concurrent issuer of
	// the same order commits; the unique index then catches it, and dup
	// reports it once that issuer committed.
	batch := &pgx.Batch{}
	batch.Queue(`SELECT EXISTS (SELECT 1 FROM companies WHERE id = $1)`, company)
	batch.Queue(`SELECT id, number FROM invoices WHERE company_id = $1 AND order_id = $2`, company, c.OrderID)
	batch.Queue(`
		UPDATE number_series SET last_value = last_value + 1
		 WHERE company_id = $1 AND series = $2
		RETURNING last_value`, company, c.Series)
	br := tx.SendBatch(ctx, batch)
	var exists bool
	if err := br.QueryRow().Scan(&exists); err != nil {
		br.Close()
		return ledger.Outcome{}, fmt.Errorf("look up company: %w", err)
	}
	if !exists {
		br.Close()
		return ledger.Outcome{}, unknownCompany(company)
	}
	var existingID uuid.UUID
	var existingNumber string
	switch err := br.QueryRow().Scan(&existingID, &existingNumber); {
	case err == nil:
		br.Close()
		return ledger.Outcome{}, duplicateInvoice(c.OrderID, existingID, existingNumber)
	case !errors.Is(err, pgx.ErrNoRows):
		br.Close()
		return ledger.Outcome{}, fmt.Errorf("look up invoice for order: %w", err)
	}
	var seq int64
	switch err := br.QueryRow().Scan(&seq); {
	case errors.Is(err, pgx.ErrNoRows):
		br.Close()
		return ledger.Outcome{}, unknownSeries(company, c.Series)
	case err != nil:
		br.Close()
		return ledger.Outcome{}, fmt.Errorf("allocate number in series %s: %w", c.Series, err)
	}
	if err := br.Close(); err != nil {
		return ledger.Outcome{}, err
	}
	inv, entry := ledger.IssueInvoice(company, c, newID(), newID(), seq)
	err := postDocument(ctx, tx, entry, "invoices_one_per_order", dup, func(batch *pgx.Batch) {
		queueInvoices(batch, []*ledger.Invoice{inv})
	})
	if err != nil {
		return ledger.Outcome{}, fmt.Errorf("post invoice %s: %w", inv.Number, err)
	}
	return outcome("invoice.created", inv.View()), nil
}

// outcome is a result that is also the data of the one event it emits.
func outcome(eventType string, view any) ledger.Outcome {
	return ledger.Outcome{Result: view, Events: []ledger.Event{{Type: eventType, Data: view}}}
}

// postDocument writes a document and its journal entry (nil for documents
// that post nothing) in one round trip, inside a savepoint set and released
// in the same round trip. The caller has already checked the document's
// business key; when a concurrent command committed the same key in
// between, the unique index named constraint refuses the insert, but only
// once that command committed, so after rolling back to the savepoint dup
// can read and report the existing document deterministically.
func postDocument(ctx context.Context, tx pgx.Tx, entry *ledger.JournalEntry, constraint string,
	dup func(context.Context, pgx.Tx) error, add func(*pgx.Batch)) error {
	if entry != nil {
		if err := entry.Check(); err != nil {
			return err
		}
	}
	batch := &pgx.Batch{}
	batch.Queue("SAVEPOINT onceledger_document")
	if entry != nil {
		queueEntries(batch, []*ledger.JournalEntry{entry})
	}
	add(batch)
	batch.Queue("RELEASE SAVEPOINT onceledger_document")
	err := tx.SendBatch(ctx, batch).Close()
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation && pgErr.ConstraintName == constraint && dup != nil {
		if _, rbErr := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT onceledger_document"); rbErr != nil {
			return fmt.Errorf("%w (and rolling back failed: %v)", err, rbErr)
		}
		if dupErr := dup(ctx, tx); dupErr != nil {
			return dupErr
		}
	}
	return err
}

// invoiceForOrder reports the business duplicate: one invoice per order,
// whatever idempotency key the second attempt carries.
func invoiceForOrder(ctx context.Context, tx pgx.Tx, company, orderID string) error {
	var id uuid.UUID
	var number string
	err := tx.QueryRow(ctx, `SELECT id, number FROM invoices WHERE company_id = $1 AND order_id = $2`,
		company, orderID).Scan(&id, &number)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up invoice for order: %w", err)
	}
	return duplicateInvoice(orderID, id, number)
}

func duplicateInvoice(orderID string, id uuid.UUID, number string) *ledger.Error {
	e := ledger.Errorf(ledger.CodeDuplicateDocument, "order %q is already invoiced by invoice %s", orderID, number)
	e.Details = map[string]any{"document": "invoice", "invoice_id": id.String(), "number": number, "order_id": orderID}
	return e
}

// newID returns a time-ordered UUIDv7, friendly to B-tree indexes.
func newID() uuid.UUID {
	return uuid.Must(uuid.NewV7())
}
