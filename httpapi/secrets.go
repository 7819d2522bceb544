package httpapi

import (
	"bytes"
	"encoding/json"

	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/webhooks"
)

// secretCommands are the commands whose body may bring a signing secret.
var secretCommands = map[string]bool{new(ledger.CreateWebhookEndpoint).CommandName(): true, new(ledger.RotateWebhookSecret).CommandName(): true}

// sealSecret replaces a readable "secret" in the body of a command that
// takes one with "sealed_secret", sealed for company, so the secret is
// never readable in the command stream, its dead letters or the inbox.
// Sealing is deterministic: a retry of the request publishes the same
// bytes and keeps its fingerprint. Other bodies are returned unchanged.
func sealSecret(keys *webhooks.Keyring, company, command string, body []byte) ([]byte, *ledger.Error) {
	if !secretCommands[command] || !bytes.Contains(body, []byte(`"secret"`)) {
		return body, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		// Refused here rather than by the worker: the body names a
		// secret, and it would stay readable in the dead letters.
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "The body is not a JSON object: %v.", err)
	}
	raw, ok := fields["secret"]
	if !ok {
		return body, nil
	}
	var secret string
	if err := json.Unmarshal(raw, &secret); err != nil {
		return nil, refuseSecret("must be a string")
	}
	if _, both := fields["sealed_secret"]; both {
		return nil, refuseSecret("give secret or sealed_secret, not both")
	}
	if err := ledger.SecretSyntax("secret", secret); err != nil {
		return nil, err
	}
	delete(fields, "secret")
	if secret != "" {
		if keys == nil {
			return nil, refuseSecret("this server takes no secrets; leave it out to have one generated")
		}
		sealed, _ := json.Marshal(keys.Seal(company, secret))
		fields["sealed_secret"] = sealed
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "The body could not be re-encoded: %v.", err)
	}
	return out, nil
}

func refuseSecret(msg string) *ledger.Error {
	return &ledger.Error{Code: ledger.CodeInvalidCommand, Message: "secret: " + msg, Details: map[string]any{"field": "secret"}}
}
