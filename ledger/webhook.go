package ledger

import (
	"encoding/base64"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
)

// The types of the events onceledger emits, each an outcome of a command
// (see Outcome.Events). Every one is in EventTypes.
const (
	EventCompanyCreated             = "company.created"
	EventInvoiceCreated             = "invoice.created"
	EventCreditNoteCreated          = "credit_note.created"
	EventPaymentRecorded            = "payment.recorded"
	EventSettlementRecorded         = "settlement.recorded"
	EventPurchaseInvoiceRecorded    = "purchase_invoice.recorded"
	EventPurchaseCreditNoteRecorded = "purchase_credit_note.recorded"
	EventPurchaseInvoiceReversed    = "purchase_invoice.reversed"
	EventSupplierPaymentRecorded    = "supplier_payment.recorded"
	EventSupplierCreditApplied      = "supplier_credit.applied"
	EventSupplierCreditRefunded     = "supplier_credit.refunded"
	EventJournalEntryRecorded       = "journal_entry.recorded"
	EventAssetRegistered            = "asset.registered"
	EventDepreciationPosted         = "depreciation.posted"
	EventCustomerCreditApplied      = "customer_credit.applied"
	EventCustomerCreditRefunded     = "customer_credit.refunded"
	EventPeriodClosed               = "period.closed"
	EventYearClosed                 = "year.closed"
	EventOpeningBalancesRecorded    = "opening_balances.recorded"
	EventFXRateRecorded             = "fx_rate.recorded"
	EventFXRevalued                 = "fx.revalued"
	EventWebhookEndpointDisabled    = "webhook_endpoint.disabled"
)

// EventTypes are the events onceledger emits; webhook endpoints filter on them.
var EventTypes = []string{
	EventCompanyCreated,
	EventInvoiceCreated,
	EventCreditNoteCreated,
	EventPaymentRecorded,
	EventSettlementRecorded,
	EventPurchaseInvoiceRecorded,
	EventPurchaseCreditNoteRecorded,
	EventPurchaseInvoiceReversed,
	EventSupplierPaymentRecorded,
	EventSupplierCreditApplied,
	EventSupplierCreditRefunded,
	EventJournalEntryRecorded,
	EventAssetRegistered,
	EventDepreciationPosted,
	EventCustomerCreditApplied,
	EventCustomerCreditRefunded,
	EventPeriodClosed,
	EventYearClosed,
	EventOpeningBalancesRecorded,
	EventFXRateRecorded,
	EventFXRevalued,
	EventWebhookEndpointDisabled,
}

func knownEventType(t string) bool {
	for _, e := range EventTypes {
		if e == t {
			return true
		}
	}
	return false
}

// CreateWebhookEndpoint is the body of webhook_endpoint.create. An empty
// EventTypes subscribes to every event. Without SealedSecret a secret is
// generated and returned in the first answer only.
type CreateWebhookEndpoint struct {
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	EventTypes  []string `json:"event_types,omitempty"`
	// Secret is refused: a readable secret would stay in the command
	// stream. The HTTP API takes one and seals it into SealedSecret.
	Secret string `json:"secret,omitempty"`
	// SealedSecret is a secret of the caller's choosing, sealed with the
	// worker's secrets key ("onceledger secrets seal").
	SealedSecret string `json:"sealed_secret,omitempty"`
	// RateLimit bounds the attempts to the endpoint per second, across
	// every worker (nil: no bound but the in-flight one).
	RateLimit *int `json:"rate_limit,omitempty"`
}

func (*CreateWebhookEndpoint) CommandName() string { return "webhook_endpoint.create" }

func (c *CreateWebhookEndpoint) validate() *Error {
	return firstError(endpointURL("url", c.URL), maxLen("description", c.Description, 500),
		eventTypes(c.EventTypes), secretFields(c.Secret, c.SealedSecret), rateLimit(c.RateLimit, false))
}

// MaxRateLimit is the highest rate limit an endpoint may have.
const MaxRateLimit = 10000

// rateLimit checks an endpoint's rate limit; on an update 0 removes it.
func rateLimit(r *int, update bool) *Error {
	switch {
	case r == nil:
		return nil
	case update && *r == 0:
		return nil
	case *r < 1 || *r > MaxRateLimit:
		if update {
			return invalid("rate_limit", "must be attempts per second from 1 to %d, or 0 to remove the limit", MaxRateLimit)
		}
		return invalid("rate_limit", "must be attempts per second from 1 to %d", MaxRateLimit)
	}
	return nil
}

// UpdateWebhookEndpoint is the body of webhook_endpoint.update: the fields
// given replace the endpoint's; Enable re-enables a disabled endpoint.
type UpdateWebhookEndpoint struct {
	EndpointID  string    `json:"endpoint_id"`
	URL         *string   `json:"url,omitempty"`
	Description *string   `json:"description,omitempty"`
	EventTypes  *[]string `json:"event_types,omitempty"`
	Enable      bool      `json:"enable,omitempty"`
	// RateLimit replaces the endpoint's; 0 removes it.
	RateLimit *int `json:"rate_limit,omitempty"`
}

func (*UpdateWebhookEndpoint) CommandName() string { return "webhook_endpoint.update" }

func (c *UpdateWebhookEndpoint) validate() *Error {
	if err := endpointID(c.EndpointID); err != nil {
		return err
	}
	if c.URL == nil && c.Description == nil && c.EventTypes == nil && !c.Enable && c.RateLimit == nil {
		return invalid("endpoint_id", "nothing to update: give url, description, event_types, rate_limit or enable")
	}
	if err := rateLimit(c.RateLimit, true); err != nil {
		return err
	}
	if c.URL != nil {
		if err := endpointURL("url", *c.URL); err != nil {
			return err
		}
	}
	if c.Description != nil {
		if err := maxLen("description", *c.Description, 500); err != nil {
			return err
		}
	}
	if c.EventTypes != nil {
		return eventTypes(*c.EventTypes)
	}
	return nil
}

// DisableWebhookEndpoint is the body of webhook_endpoint.disable.
type DisableWebhookEndpoint struct {
	EndpointID string `json:"endpoint_id"`
	Reason     string `json:"reason,omitempty"`
}

func (*DisableWebhookEndpoint) CommandName() string { return "webhook_endpoint.disable" }

func (c *DisableWebhookEndpoint) validate() *Error {
	return firstError(endpointID(c.EndpointID), maxLen("reason", c.Reason, 500))
}

// RotateWebhookSecret is the body of webhook_endpoint.rotate_secret: the
// new secret (generated when absent) signs from now on; the old ones keep
// signing too until GracePeriod (default 24h) has passed, so receivers can
// switch without missing a delivery.
type RotateWebhookSecret struct {
	EndpointID string `json:"endpoint_id"`
	// Secret and SealedSecret are as in CreateWebhookEndpoint.
	Secret       string `json:"secret,omitempty"`
	SealedSecret string `json:"sealed_secret,omitempty"`
	GracePeriod  string `json:"grace_period,omitempty"`
}

func (*RotateWebhookSecret) CommandName() string { return "webhook_endpoint.rotate_secret" }

func (c *RotateWebhookSecret) validate() *Error {
	if c.GracePeriod == "" {
		c.GracePeriod = "24h"
	}
	if err := firstError(endpointID(c.EndpointID), secretFields(c.Secret, c.SealedSecret)); err != nil {
		return err
	}
	if d, err := time.ParseDuration(c.GracePeriod); err != nil || d < 0 || d > 30*24*time.Hour {
		return invalid("grace_period", "must be a duration from 0s to 720h, such as \"24h\"")
	}
	return nil
}

// Grace is the parsed grace period.
func (c *RotateWebhookSecret) Grace() time.Duration {
	d, _ := time.ParseDuration(c.GracePeriod)
	return d
}

func endpointID(id string) *Error {
	if uuid.Validate(id) != nil {
		return invalid("endpoint_id", "%q is not a UUID", id)
	}
	return nil
}

// endpointURL accepts absolute http(s) URLs without credentials. Whether
// the address may be dialled is decided when it is dialled, against the
// resolved address.
func endpointURL(field, raw string) *Error {
	if len(raw) > 2048 {
		return invalid(field, "is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return invalid(field, "is not a URL: %v", err)
	case u.Scheme != "https" && u.Scheme != "http":
		return invalid(field, "must be an https:// (or http://) URL")
	case u.Host == "" || u.Hostname() == "":
		return invalid(field, "has no host")
	case u.User != nil:
		return invalid(field, "must not carry credentials; sign with the endpoint secret instead")
	case u.Fragment != "":
		return invalid(field, "must not have a #fragment")
	}
	return nil
}

func eventTypes(types []string) *Error {
	seen := map[string]bool{}
	for i, t := range types {
		if !knownEventType(t) {
			return invalid(fieldf("event_types[%d]", i), "%q is not an event type (known: %s)", t, strings.Join(EventTypes, ", "))
		}
		if seen[t] {
			return invalid(fieldf("event_types[%d]", i), "%q is listed twice", t)
		}
		seen[t] = true
	}
	return nil
}

// sealedSecretPrefix starts a secret sealed with the worker's secrets key.
const sealedSecretPrefix = "sealed:v1:"

// secretFields checks a command's secret fields: a readable secret is
// refused (it would stay readable in the command stream and its dead
// letters); a sealed one must look sealed (whether it opens is the
// worker's to say, as it holds the key).
func secretFields(plain, sealed string) *Error {
	if plain != "" {
		if err := SecretSyntax("secret", plain); err != nil {
			return err
		}
		return invalid("secret", "a readable secret would stay in the command stream: leave it out to have one generated, "+
			"give it to the HTTP API (which seals it), or seal it with \"onceledger secrets seal\" and send it as sealed_secret")
	}
	if sealed != "" && (!strings.HasPrefix(sealed, sealedSecretPrefix) || len(sealed) > 512) {
		return invalid("sealed_secret", "must be a secret sealed with \"onceledger secrets seal\" (sealed:v1:…)")
	}
	return nil
}

// SecretSyntax checks the Standard Webhooks secret form; an empty secret
// means "generate one".
func SecretSyntax(field, s string) *Error {
	if s == "" {
		return nil
	}
	b64, ok := strings.CutPrefix(s, "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if !ok || err != nil || len(key) < 24 || len(key) > 64 {
		return invalid(field, "must be a Standard Webhooks secret: whsec_ followed by base64 of 24 to 64 random bytes")
	}
	return nil
}
