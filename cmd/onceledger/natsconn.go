package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/client"
)

// natsFlags are the NATS connection settings every command that talks to
// NATS takes: the nats CLI's environment variables, each with a flag.
type natsFlags struct {
	client.Connection
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	env := client.ConnectionFromEnv()
	fs.StringVar(&n.URL, "nats-url", env.URL, "NATS server URL; nats://user:password@host:4222 or nats://token@host:4222 authenticate (env NATS_URL)")
	fs.StringVar(&n.Creds, "nats-creds", env.Creds, "NATS .creds file: user JWT and nkey seed (env NATS_CREDS)")
	fs.StringVar(&n.NKey, "nats-nkey", env.NKey, "NATS user nkey seed file (env NATS_NKEY)")
	fs.StringVar(&n.CA, "nats-ca", env.CA, "PEM file of the CAs of the NATS server's certificate; turns TLS on (env NATS_CA)")
	fs.StringVar(&n.Cert, "nats-cert", env.Cert, "client certificate for mutual TLS with NATS (env NATS_CERT)")
	fs.StringVar(&n.Key, "nats-key", env.Key, "client certificate's key for mutual TLS with NATS (env NATS_KEY)")
	fs.StringVar(&n.InboxPrefix, "nats-inbox-prefix", env.InboxPrefix, "prefix of reply subjects instead of _INBOX, e.g. _INBOX_acme where the server gives each producer its own (env NATS_INBOX_PREFIX)")
}

// validate checks what can be checked before connecting. Its errors name
// the URL redacted.
func (n *natsFlags) validate() []error {
	var errs []error
	for _, p := range strings.Split(n.URL, ",") {
		if u, err := url.Parse(strings.TrimSpace(p)); err != nil || u.Host == "" {
			errs = append(errs, fmt.Errorf("NATS_URL %q must be a URL such as nats://127.0.0.1:4222", client.RedactURL(p)))
		}
	}
	if _, err := n.Options(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// connect is how every command connects to NATS; name is the connection's
// name the server shows. Errors never carry a password or token.
func (n *natsFlags) connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	return n.Connect(append([]nats.Option{nats.Name(name)}, opts...)...)
}

// authRefused reports whether a connect error is the server refusing the
// credentials, which retrying cannot cure.
func authRefused(err error) bool {
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired)
}
