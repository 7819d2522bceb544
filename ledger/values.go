package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/shopspring/decimal"
)

// Decimal is a decimal number that travels as a JSON string ("100.00").
// JSON numbers are refused: a producer that sends 0.1 as a number has most
// likely computed it with a float somewhere.
type Decimal struct{ decimal.Decimal }

// D parses a decimal literal and panics on bad input; for constants and tests.
func D(s string) Decimal { return Decimal{decimal.RequireFromString(s)} }

func (d *Decimal) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return valueError(b, reflect.TypeFor[Decimal]())
	}
	// Without escapes the string between the quotes is the literal, and
	// decoding it as a JSON string would only copy it.
	var s string
	if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b[1:len(b)-1], '\\') < 0 {
		s = string(b[1 : len(b)-1])
	} else if err := json.Unmarshal(b, &s); err != nil {
		return valueError(b, reflect.TypeFor[Decimal]())
	}
	if !decimalSyntax(s) {
		return valueError(b, reflect.TypeFor[Decimal]())
	}
	v, err := decimal.NewFromString(s)
	if err != nil {
		return valueError(b, reflect.TypeFor[Decimal]())
	}
	d.Decimal = v
	return nil
}

// valueError reports a malformed value as a *json.UnmarshalTypeError: it is
// the only error encoding/json completes with the path of the field, which
// Decode needs to name the field in its message.
func valueError(b []byte, t reflect.Type) error {
	return &json.UnmarshalTypeError{Value: string(b), Type: t}
}

// MarshalJSON writes the literal in quotes: it has no character a JSON
// string would escape, so no encoder needs to run for it (every amount of
// every result and event goes through here).
func (d Decimal) MarshalJSON() ([]byte, error) { return quoted(d.String()), nil }

// quoted is s in double quotes, for strings that need no escape.
func quoted(s string) []byte {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// decimalSyntax reports whether s is -?[0-9]{1,20}(\.[0-9]{1,8})?: it
// keeps exponents and other forms decimal.NewFromString tolerates out of
// documents. Written out rather than a regular expression: it runs for
// every amount of every command.
func decimalSyntax(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i < 1 || i > 20 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	frac := s[i+1:]
	if len(frac) < 1 || len(frac) > 8 {
		return false
	}
	for j := 0; j < len(frac); j++ {
		if frac[j] < '0' || frac[j] > '9' {
			return false
		}
	}
	return true
}

// maxStored bounds what an amount column holds: numeric(28, 8) keeps 20
// digits before the decimal point. Inputs have at most 20 (decimalSyntax),
// but what is computed from them (quantity × price, totals, net of a
// payout) can have more, and is refused here rather than by the database.
var maxStored = decimal.New(1, 20)

const storableLimit = "less than 10^20 in absolute value"

// Storable reports whether the books can hold d as an amount.
func Storable(d decimal.Decimal) bool { return d.Abs().LessThan(maxStored) }

// Date is a calendar date without time zone ("2026-12-02").
type Date struct{ time.Time }

const dateLayout = "2006-01-02"

// ParseDate parses YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return Date{}, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
	}
	return Date{t}, nil
}

func (d *Date) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return valueError(b, reflect.TypeFor[Date]())
	}
	v, err := ParseDate(s)
	if err != nil {
		return valueError(b, reflect.TypeFor[Date]())
	}
	*d = v
	return nil
}

func (d Date) MarshalJSON() ([]byte, error) { return quoted(d.String()), nil }

func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return d.Format(dateLayout)
}
