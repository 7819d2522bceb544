package ledger_test

import (
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/ledger"
)

// The invoice.create example of the design: three hours of consulting at
// 100.00 EUR with 21% VAT.
func ExampleIssueInvoice() {
	body := []byte(`{"order_id": "order-1041", "series": "INV",
	 "customer": {"id": "cust-42", "name": "UAB Pavyzdys", "vat_id": "LT100000000010", "country": "LT"},
	 "currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
	 "lines": [{"description": "Consulting", "quantity": "3", "unit_price": "100.00", "vat_rate": "21"}]}`)

	cmd, err := ledger.Decode("invoice.create", body)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The store allocates the sequence and IDs inside the posting transaction.
	inv, entry := ledger.IssueInvoice("acme", cmd.(*ledger.CreateInvoice), nil, uuid.New(), uuid.New(), 1)

	v := inv.View()
	fmt.Println(v.Number)
	fmt.Printf("net %s, VAT %s, gross %s %s\n", v.Net, v.VAT, v.Gross, v.Currency)
	for _, r := range v.VATBreakdown {
		fmt.Printf("VAT %s%% on %s: %s\n", r.Rate, r.Net, r.VAT)
	}
	for _, l := range entry.Lines {
		if l.Debit.IsPositive() {
			fmt.Printf("Dr %s %s\n", l.Account, inv.Currency.Format(l.Debit))
		} else {
			fmt.Printf("  Cr %s %s\n", l.Account, inv.Currency.Format(l.Credit))
		}
	}
	fmt.Println("balanced:", entry.Check() == nil)
	// Output:
	// INV-2026-000001
	// net 300.00, VAT 63.00, gross 363.00 EUR
	// VAT 21% on 300.00: 63.00
	// Dr 1200 363.00
	//   Cr 4000 300.00
	//   Cr 2300 63.00
	// balanced: true
}

// A body that can never succeed is refused with invalid_command and a
// message that names the field.
func ExampleDecode() {
	_, err := ledger.Decode("invoice.create", []byte(`{"order_id": "order-1041",
	 "customer": {"id": "cust-42", "name": "UAB Pavyzdys", "country": "LT"},
	 "currency": "EUR", "issue_date": "2026-12-02", "due_date": "2026-12-16",
	 "lines": [{"description": "Consulting", "quantity": 3, "unit_price": "100.00", "vat_rate": "21"}]}`))

	var e *ledger.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
		fmt.Println(e.Message)
		fmt.Println("retryable:", e.Code.Retryable())
	}
	// Output:
	// invalid_command
	// lines[0].quantity: must be a decimal string such as "100.00", not 3
	// retryable: false
}
