package client

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// Connection says how to reach and authenticate to NATS, with the same
// settings, and the same environment variables, as the nats CLI: a user and
// password or a token in the URL, a .creds file (JWT and nkey seed), an nkey
// seed file, TLS. A program that builds its own nats.Options needs none of
// this: pass Options to nats.Connect, or set the equivalent nats options
// (nats.UserCredentials, nats.NkeyOptionFromSeed, nats.RootCAs,
// nats.ClientCert, nats.CustomInboxPrefix).
type Connection struct {
	// URL of the server, e.g. nats://127.0.0.1:4222; several may be given,
	// separated by commas. nats://user:password@host:4222 and
	// nats://token@host:4222 authenticate with a password or a token.
	URL string
	// Creds is a .creds file: a user JWT and its nkey seed (NATS_CREDS).
	Creds string
	// NKey is a file holding a user's nkey seed (NATS_NKEY).
	NKey string
	// CA is a PEM file of the CAs that sign the server's certificate
	// (NATS_CA); Cert and Key are the client's certificate and key for
	// mutual TLS (NATS_CERT, NATS_KEY). Any of them turns TLS on.
	CA, Cert, Key string
	// InboxPrefix replaces _INBOX as the prefix of reply subjects
	// (NATS_INBOX_PREFIX). A server that gives each producer a reply
	// subject space of its own (deploy/nats/nats-server.conf:
	// _INBOX_<company>.>) lets it subscribe there only, so that no producer
	// can read another's replies.
	InboxPrefix string
}

// ConnectionFromEnv reads NATS_URL, NATS_CREDS, NATS_NKEY, NATS_CA,
// NATS_CERT, NATS_KEY and NATS_INBOX_PREFIX. URL defaults to
// nats://127.0.0.1:4222.
func ConnectionFromEnv() Connection {
	c := Connection{
		URL: os.Getenv("NATS_URL"), Creds: os.Getenv("NATS_CREDS"), NKey: os.Getenv("NATS_NKEY"),
		CA: os.Getenv("NATS_CA"), Cert: os.Getenv("NATS_CERT"), Key: os.Getenv("NATS_KEY"),
		InboxPrefix: os.Getenv("NATS_INBOX_PREFIX"),
	}
	if c.URL == "" {
		c.URL = nats.DefaultURL
	}
	return c
}

// Options returns the nats options for c's credentials and TLS. A file that
// cannot be read is an error now rather than at the first connect.
func (c Connection) Options() ([]nats.Option, error) {
	var opts []nats.Option
	var errs []error
	if c.Creds != "" && c.NKey != "" {
		errs = append(errs, errors.New("NATS_CREDS and NATS_NKEY are both set: a .creds file already holds the nkey seed, give one of them"))
	}
	if c.Creds != "" {
		if _, err := os.Stat(c.Creds); err != nil {
			errs = append(errs, fmt.Errorf("NATS_CREDS: %w", err))
		}
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("NATS_NKEY: %w", err))
		} else {
			opts = append(opts, o)
		}
	}
	if c.CA != "" {
		opts = append(opts, nats.RootCAs(c.CA))
	}
	switch {
	case c.Cert != "" && c.Key != "":
		opts = append(opts, nats.ClientCert(c.Cert, c.Key))
	case c.Cert != "" || c.Key != "":
		errs = append(errs, errors.New("NATS_CERT and NATS_KEY go together: give both for mutual TLS, or neither"))
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	// A subscription the server refuses (a reply subject outside the
	// user's permissions) fails at once instead of waiting for messages
	// that can never come.
	opts = append(opts, nats.PermissionErrOnSubscribe(true))
	return opts, errors.Join(errs...)
}

// Connect connects with c's settings, then opts. Its errors name the server
// by RedactURL(c.URL): a password or token in the URL never appears in them.
func (c Connection) Connect(opts ...nats.Option) (*nats.Conn, error) {
	own, err := c.Options()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(c.URL, append(own, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", RedactURL(c.URL), redactErr(err, c.URL))
	}
	return nc, nil
}

// RedactURL returns a NATS URL (or a comma-separated list of them) with any
// password or token replaced by "xxxxx", for logs and errors.
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		switch {
		case err != nil:
			// url.Parse quotes its input in its errors; say nothing of it.
			parts[i] = "(unparseable URL)"
		case u.User == nil:
			parts[i] = p
		default:
			if _, ok := u.User.Password(); ok {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			} else {
				u.User = url.User("xxxxx")
			}
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// redactErr keeps err for errors.Is but hides the secrets of rawURL should
// the error quote the URL (url.Parse does).
func redactErr(err error, rawURL string) error {
	msg := err.Error()
	for _, p := range strings.Split(rawURL, ",") {
		if p = strings.TrimSpace(p); p != "" {
			msg = strings.ReplaceAll(msg, p, RedactURL(p))
		}
	}
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }
