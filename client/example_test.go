package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Issue the invoice of an order. The key comes from the order, so a retry,
// a restart or a second process sending the same order all use the same
// key, and the order is invoiced once.
func ExampleClient_Do() {
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc)
	if err != nil {
		log.Fatal(err)
	}

	issue, _ := ledger.ParseDate("2026-12-02")
	due, _ := ledger.ParseDate("2026-12-16")
	cmd := &ledger.CreateInvoice{
		OrderID:   "order-1041",
		Customer:  ledger.Party{ID: "cust-42", Name: "UAB Pavyzdys", Country: "LT"},
		Currency:  "EUR",
		IssueDate: issue,
		DueDate:   due,
		Lines:     []ledger.InvoiceLine{{Description: "Consulting", Quantity: ledger.D("3"), UnitPrice: ledger.D("100.00"), VATRate: ledger.D("21")}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cl.Do(ctx, "acme", cmd, client.Key("order", "1041", "invoice"))
	if err != nil {
		// An *Error is the worker's final answer for this key; anything
		// else means "not known yet": run the same Do again later.
		log.Fatal(err)
	}
	var inv ledger.InvoiceView
	if err := json.Unmarshal(res.Result, &inv); err != nil {
		log.Fatal(err)
	}
	fmt.Println(inv.Number, inv.Gross, res.Replayed)
}

// Branch on the error codes of the contract.
func ExampleIsCode() {
	handle := func(err error) string {
		var ce *client.Error
		switch {
		case err == nil:
			return "done"
		case client.IsCode(err, ledger.CodeDuplicateDocument):
			return "already invoiced under another key"
		case client.IsCode(err, ledger.CodeIdempotencyKeyReused):
			// The key was used for something else: a bug in how keys are
			// derived, never something to retry with a new key.
			return "key reused"
		case errors.As(err, &ce):
			return "refused: " + string(ce.Code)
		case errors.Is(err, client.ErrNoResult):
			return "unknown yet: retry with the same key"
		default:
			return "transport: retry with the same key"
		}
	}
	fmt.Println(handle(&client.Error{Code: ledger.CodeIdempotencyKeyReused, Message: protocol.MessageKeyReused}))
	fmt.Println(handle(&client.Error{Code: ledger.CodeConflict, Message: "credit exceeds what is left"}))
	fmt.Println(handle(fmt.Errorf("%w: …", client.ErrNoResult)))
	// Output:
	// key reused
	// refused: conflict
	// unknown yet: retry with the same key
}

// Keys come from your own IDs, never from the attempt or the payload.
func ExampleKey() {
	fmt.Println(client.Key("order", "1041", "invoice"))
	fmt.Println(client.Key("payout", "po_3N9x", "settlement"))
	// Output:
	// order-1041-invoice
	// payout-po_3N9x-settlement
}

// Publish without waiting, then collect the result later by key.
func ExampleClient_Enqueue() {
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	cl, _ := client.New(nc)
	ctx := context.Background()
	body := []byte(`{"asset_id": "laptop-7", "period": "2026-12"}`)
	if _, err := cl.Enqueue(ctx, "acme", "depreciation.run", "laptop-7-2026-12", body); err != nil {
		log.Fatal(err)
	}
	// … later, or in another process:
	res, err := cl.Await(ctx, "acme", "laptop-7-2026-12")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status)
}
