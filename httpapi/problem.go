package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/onceledger/onceledger/ledger"
)

// Codes of problems that arise in HTTP itself, next to the ledger's codes.
const (
	codeUnauthorized     ledger.Code = "unauthorized"
	codeTooLarge         ledger.Code = "request_too_large"
	codeMethodNotAllowed ledger.Code = "method_not_allowed"
	codeInvalidRequest   ledger.Code = "invalid_request"
	// codeRequestTimeout: the body did not arrive within the server's
	// deadline. Nothing was published, so the same request may be sent
	// again with the same key.
	codeRequestTimeout ledger.Code = "request_timeout"
	// codeMisdirected: the token's company is served by another cell,
	// named in the problem's cell member.
	codeMisdirected ledger.Code = "misdirected_request"
	// codeRateLimited: too many requests of a kind that has a limit (test
	// events of one webhook endpoint); Retry-After says when to try again.
	codeRateLimited ledger.Code = "rate_limited"
)

// statusOf maps an error code to its HTTP status.
func statusOf(code ledger.Code) int {
	switch code {
	case ledger.CodeInvalidCommand, ledger.CodeIdempotencyKeyMissing, ledger.CodeIdempotencyKeyInvalid, codeInvalidRequest:
		return http.StatusBadRequest
	case codeUnauthorized:
		return http.StatusUnauthorized
	case ledger.CodeUnknownCompany, ledger.CodeNotFound:
		return http.StatusNotFound
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case ledger.CodeIdempotencyKeyInFlight, ledger.CodeDuplicateDocument, ledger.CodeConflict, ledger.CodePeriodClosed:
		return http.StatusConflict
	case codeRequestTimeout:
		return http.StatusRequestTimeout
	case codeMisdirected:
		return http.StatusMisdirectedRequest
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	case codeRateLimited:
		return http.StatusTooManyRequests
	case ledger.CodeIdempotencyKeyReused:
		return http.StatusUnprocessableEntity
	case ledger.CodeInternal:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

var titles = map[ledger.Code]string{
	ledger.CodeInvalidCommand:         "Invalid command",
	ledger.CodeIdempotencyKeyMissing:  "Idempotency-Key missing",
	ledger.CodeIdempotencyKeyInvalid:  "Idempotency-Key invalid",
	ledger.CodeIdempotencyKeyReused:   "Idempotency-Key reused",
	ledger.CodeIdempotencyKeyInFlight: "Request in flight",
	ledger.CodeUnknownCompany:         "Unknown company",
	ledger.CodeDuplicateDocument:      "Duplicate document",
	ledger.CodeNotFound:               "Not found",
	ledger.CodeConflict:               "Conflict",
	ledger.CodePeriodClosed:           "Period closed",
	ledger.CodeInternal:               "Temporarily unavailable",
	codeUnauthorized:                  "Unauthorized",
	codeTooLarge:                      "Request body too large",
	codeMethodNotAllowed:              "Method not allowed",
	codeInvalidRequest:                "Invalid request",
	codeRequestTimeout:                "Request timeout",
	codeMisdirected:                   "Misdirected request",
	codeRateLimited:                   "Too many requests",
}

// retryAfter is the Retry-After of retryable problems, in seconds.
var retryAfter = map[ledger.Code]int{
	ledger.CodeIdempotencyKeyInFlight: 1,
	ledger.CodeInternal:               5,
}

// problem is an RFC 9457 problem details object.
type problem struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Detail    string         `json:"detail"`
	Code      ledger.Code    `json:"code"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details,omitempty"`
}

func newProblem(code ledger.Code, detail string, details map[string]any) problem {
	title := titles[code]
	if title == "" {
		title = string(code)
	}
	return problem{
		Type:      "urn:onceledger:problem:" + string(code),
		Title:     title,
		Status:    statusOf(code),
		Detail:    detail,
		Code:      code,
		Retryable: code.Retryable() || code == codeRequestTimeout || code == codeRateLimited,
		Details:   details,
	}
}

// writeProblem writes a problem for code with the message detail.
func writeProblem(w http.ResponseWriter, code ledger.Code, detail string, details map[string]any) {
	p := newProblem(code, detail, details)
	if s, ok := retryAfter[code]; ok {
		w.Header().Set("Retry-After", strconv.Itoa(s))
	}
	body, err := encode(p)
	if err != nil {
		// Details come from JSON; they encode.
		body, _ = encode(newProblem(code, detail, nil))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	w.Write(body)
}

// writeJSON writes v as a JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := encode(v)
	if err != nil {
		writeProblem(w, ledger.CodeInternal, "The response could not be encoded.", nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// encode marshals v on one line, without escaping <, > and & (the bodies
// are JSON, not HTML).
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}
