package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// Command is a decoded, validated command body. Name is the command's part
// of the subject: ledger.cmd.<company>.<name>.
type Command interface {
	CommandName() string
	validate() *Error
}

// commands maps each command's name, as its CommandName says it (the one
// place a name is written), to a constructor of its body type.
var commands = register(
	new(CreateCompany),
	new(CreateInvoice),
	new(CreateCreditNote),
	new(RecordPayment),
	new(RecordSettlement),
	new(RecordPurchaseInvoice),
	new(RecordPurchaseCreditNote),
	new(ReversePurchaseInvoice),
	new(RecordSupplierPayment),
	new(ApplySupplierCredit),
	new(RefundSupplierCredit),
	new(RecordJournalEntry),
	new(RegisterAsset),
	new(RunDepreciation),
	new(ApplyCustomerCredit),
	new(RefundCustomerCredit),
	new(ClosePeriod),
	new(CloseYear),
	new(RecordOpeningBalances),
	new(RecordFXRate),
	new(RevalueFX),

	new(CreateWebhookEndpoint),
	new(UpdateWebhookEndpoint),
	new(DisableWebhookEndpoint),
	new(RotateWebhookSecret),
)

func register(cmds ...Command) map[string]func() Command {
	m := make(map[string]func() Command, len(cmds))
	for _, c := range cmds {
		name, t := c.CommandName(), reflect.TypeOf(c).Elem()
		if _, dup := m[name]; dup {
			panic("ledger: two commands named " + name)
		}
		m[name] = func() Command { return reflect.New(t).Interface().(Command) }
	}
	return m
}

// CommandNames returns the names of all commands, sorted.
func CommandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KnownCommand reports whether name is a command onceledger executes.
func KnownCommand(name string) bool {
	_, ok := commands[name]
	return ok
}

// Decode parses and validates a command body. Unknown fields, trailing data
// and values of the wrong type are refused. Every error is an *Error with
// code invalid_command: the same body can never succeed.
func Decode(name string, body []byte) (Command, error) {
	newCmd, ok := commands[name]
	if !ok {
		return nil, Errorf(CodeInvalidCommand, "unknown command %q (known: %s)", name, strings.Join(CommandNames(), ", "))
	}
	if err := checkNUL(body); err != nil {
		return nil, err
	}
	cmd := newCmd()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cmd); err != nil {
		return nil, decodeError(body, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, Errorf(CodeInvalidCommand, "body must hold exactly one JSON object")
	}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	return cmd, nil
}

func decodeError(body []byte, err error) *Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		} else if at, ok := locate(body, strings.Split(field, "."), typeErr.Type, ""); ok {
			field = at
		}
		return invalid(field, "must be %s, not %s", expected(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return Errorf(CodeInvalidCommand, "body is not valid JSON: %v (at byte %d)", syntaxErr, syntaxErr.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(CodeInvalidCommand, "body is empty or truncated: a JSON object is required")
	default:
		return Errorf(CodeInvalidCommand, "body: %v", err)
	}
}

// locate finds the value a type error is about and returns its path with
// array indexes (lines[1].unit_price), the form validation errors use. The
// decoder names only the struct fields (lines.unit_price), so the body is
// walked along those names, and the first value in document order that
// does not decode into t is the one: the decoder keeps its first error.
// Only the error path pays for the second parse.
func locate(raw []byte, names []string, t reflect.Type, path string) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if len(names) == 0 && (raw[0] != '[' || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
			return path, true
		}
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	switch raw[0] {
	case '{':
		if len(names) == 0 {
			return "", false
		}
		dec.Token()
		for dec.More() {
			tok, err := dec.Token()
			var v json.RawMessage
			if err != nil || dec.Decode(&v) != nil {
				return "", false
			}
			// The decoder matches keys to field names case-insensitively.
			if key, _ := tok.(string); strings.EqualFold(key, names[0]) {
				next := names[0]
				if path != "" {
					next = path + "." + names[0]
				}
				if at, ok := locate(v, names[1:], t, next); ok {
					return at, true
				}
			}
		}
	case '[':
		dec.Token()
		for i := 0; dec.More(); i++ {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return "", false
			}
			if at, ok := locate(v, names, t, fmt.Sprintf("%s[%d]", path, i)); ok {
				return at, true
			}
		}
	}
	return "", false
}

// expected says what a JSON value must look like to decode into t.
func expected(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[Decimal]():
		return `a decimal string such as "100.00"`
	case t == reflect.TypeFor[Date]():
		return "a date string (YYYY-MM-DD)"
	case t.Kind() == reflect.Struct:
		return "a JSON object"
	case t.Kind() == reflect.Slice:
		return "a JSON array"
	}
	return t.String()
}

// ValidCompanyID reports whether id can name a company: 1–63 characters of
// lower-case letters, digits, '-' and '_', starting with a letter or digit
// (^[a-z0-9][a-z0-9_-]{0,62}$, written out: every message's subject is
// checked). The id is a NATS subject token, so it cannot hold dots or
// wildcards.
func ValidCompanyID(id string) bool {
	if len(id) == 0 || len(id) > 63 || id[0] == '-' || id[0] == '_' {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func required(field, v string, max int) *Error {
	switch {
	case strings.TrimSpace(v) == "":
		return invalid(field, "is required")
	case len(v) > max:
		return invalid(field, "is longer than %d characters", max)
	}
	return nil
}

var countrySyntax = regexp.MustCompile(`^[A-Z]{2}$`)

func country(field, v string) *Error {
	if !countrySyntax.MatchString(v) {
		return invalid(field, "must be an ISO 3166-1 alpha-2 code such as \"LT\", not %q", v)
	}
	return nil
}

func currency(field, v string) (Currency, *Error) {
	c, ok := LookupCurrency(v)
	if !ok {
		return Currency{}, invalid(field, "%q is not a supported ISO 4217 currency code", v)
	}
	return c, nil
}

func firstError(errs ...*Error) *Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func fieldf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
