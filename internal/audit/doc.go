// Package audit checks a onceledger database for the invariants the rest of
// the system promises, after the fact, from the data alone. It is what
// `onceledger audit` runs, and what a fault-injection suite runs after it has
// crashed workers, cut connections and redelivered messages: a clean report
// says the faults left no trace in the books.
//
// Run reads everything in one repeatable-read, read-only snapshot, so the
// checks agree with each other while commands keep committing, and uses
// set-based queries only (a handful of scans per check, never a query per
// row), so it works on millions of rows. It writes nothing. With
// Options.Parallel on a pool, the checks run on several connections whose
// transactions import the first one's exported snapshot: still one
// snapshot. Options.Timeout ends it with the report of the checks that
// finished, the others named unfinished.
//
// # What each check proves
//
// trial_balance: for every company and currency, the debits of all journal
// lines equal the credits. Together with journal_entries this proves double
// entry held for every posting, not only at the database's commit trigger.
//
// journal_entries: every journal entry has at least two lines and balances
// in each currency on its own, and no line belongs to a missing entry. A
// trial balance can net to zero while two entries are off by opposite
// amounts; this check cannot be fooled that way. Every line is of its
// entry's company.
//
// number_series: for every company and series, the sequences of its
// documents (invoices and credit notes share the counter of their series)
// are exactly 1..n with n equal to number_series.last_value: no number is
// missing, none is used twice, and the counter neither lags (the next
// document would reuse a number) nor runs ahead (a number was burnt).
//
// receivables, customer_credits and supplier_credits: accounts 1200,
// 2200 and 1400 equal, per company and currency, the open invoices, the
// customers' credits and the company's credits with suppliers, and every
// document posted to them what it says.
//
// document_totals: every invoice, credit note and purchase invoice is the
// sum of its lines, and its journal entry (of its company, in its
// currency) carries the same net, VAT and gross on the accounts its kind
// posts to and on no other. A purchase's reverse-charged lines are posted
// as docs/vat.md says: their VAT is credited to output VAT (2300) instead
// of payables (2100), so its gross is 2100 and 2300 together, and 2300
// holds exactly the VAT those lines assess. The database refuses a wrong
// document at commit (invoices_agree, credit_notes_agree); this finds one
// written before that, or with the triggers off.
//
// credit_notes: per invoice and VAT rate, its credit notes take back no
// more net and VAT than it charged. payments: a payment's allocations and
// unapplied rest make its amount, no invoice is paid beyond what its
// credit notes left of it, and no receivable an opening left open beyond
// what was open on it (by payments and customers' credit). currencies: every currency column holds a code
// of ledger.Currencies().
//
// manual_journals: every manual journal entry (journal_entry.record) has
// its journal entry, of its company, date and source, every journal entry
// of source journal is one's, and none posts to an account only documents
// post to (ledger.DocumentAccounts: receivables, payables, VAT, credits,
// fixed assets), so those accounts stay the sums of their documents.
//
// inbox_effects: every idempotency key whose stored result is a success
// names, in that result, a document that exists for the key's company
// (invoice.create its invoice, company.create its company, asset.register
// its asset by asset_id, webhook_endpoint.create its endpoint, …), and no
// two keys name the same document. (Commands that create nothing, the
// endpoint updates, disables and rotations, are not matched.) This is the
// "effects committed with the key" half of exactly-once: a key cannot claim
// an effect that is not there.
//
// effects_inbox: every document created at or after the inbox horizon has
// the successful key that created it. The horizon is the creation time of
// the oldest key still stored: keys are purged oldest first after their
// retention, and a document's creation time is its key's (both take the
// time of the transaction that wrote them), so a document from before the
// horizon may legitimately have lost its key, and none after it can have.
// This is the other half: no effect without its key, so no command ran
// outside the inbox or twice.
//
// event_deliveries: every outbox event has a webhook delivery for each
// endpoint of its company that is enabled, matches the event's type, and
// was created and last changed at least Grace before the event. Only the
// endpoint's current state is stored, so an endpoint changed (disabled,
// re-enabled, refiltered, its secret rotated) after an event is not held
// against that event. An endpoint's times are those of the start of the
// transaction that wrote it, which may still have been open when another
// transaction wrote an event, or may have written events of other commands
// before it (commands share transactions); Grace absorbs that, and clock
// skew between workers and the database. A webhook.test event is expected
// at the one endpoint its data names, and at no other.
//
// delivery_events: every webhook delivery points at an event that exists
// and belongs to the delivery's company. (Event IDs are a primary key, so
// they cannot repeat; this is what is left to check about them.)
//
// event_sequences: each company's events are numbered without gaps or
// repeats up to outbox_sequences.last_value. Events are purged after the
// outbox retention, so a gap is reported only where the missing events
// must be younger than OutboxRetention (minus Grace), judged by the event
// before the gap (or the company's creation for a gap at the start): older
// gaps are what retention leaves and are only counted in the check's note.
//
// unpublished_age and undelivered_age: the oldest event the relay has not
// yet published, and the oldest delivery still pending or being attempted
// to an enabled endpoint, must be younger than MaxUnpublishedAge and
// MaxUndeliveredAge. Deliveries to disabled endpoints wait for the endpoint
// to be re-enabled and are only counted (Stats.ParkedDeliveries). These two
// prove liveness, not safety: a failing receiver also trips
// undelivered_age, and the violation names it.
//
// stream_commands and stream_events compare the database with JetStream,
// when Options.Streams gives the audit NATS (else they are reported not
// run). stream_commands: every message of the command stream at or below
// the workers' durable consumer's ack floor, and still in the stream, left
// its trace: its key in the inbox (run, replayed, or refused for reusing a
// stored key), a dead letter naming its stream sequence, or nothing for a
// message refused as sent and answered on its Reply-To. The ack floor is
// read before the snapshot: the worker acknowledges after its commit, so
// the snapshot sees every transaction of an acknowledged message. A
// message of a company whose partition is fenced here (it moved to another
// cell) is that cell's. The stream is read through one ordered consumer
// that delivers headers only, and keys go to Postgres in batches, one
// query each. stream_events: every event the relay has published is in the
// events stream under its ID (its Nats-Msg-Id), unless the stream may have
// aged it out: once it has dropped its first message, only events written
// after its oldest message are held to it.
//
// # What it does not prove
//
// That each line's amounts are right (quantity times price, VAT at the
// right rate: the ledger's own tests and the property test check
// arithmetic against a model), that a key purged before
// the horizon ever existed, or anything about a command that left the
// command stream (by its age) or is not yet acknowledged. Dead letters are
// counted, not judged: `onceledger admin dlq` inspects them.
package audit
