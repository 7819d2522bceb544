package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenAddress is returned when a webhook target resolves to an
// address deliveries may not reach.
var ErrForbiddenAddress = errors.New("webhook target address is not allowed")

// forbidden are the ranges a webhook may not reach unless allowed: a URL
// registered by a tenant must not become a way into the operator's network
// (cloud metadata at 169.254.169.254, databases on 10.x, the worker itself).
var forbidden = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "100::/64", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// AddressPolicy decides which addresses webhook deliveries may dial.
type AddressPolicy struct {
	allow []netip.Prefix
}

// ParseAllowCIDRs builds a policy from a comma-separated list of CIDRs that
// are allowed although they are private, loopback or link-local
// (ONCELEDGER_WEBHOOK_ALLOW_CIDRS). An empty list allows only public
// addresses.
func ParseAllowCIDRs(list string) (AddressPolicy, error) {
	var p AddressPolicy
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(s)
		if err != nil {
			return AddressPolicy{}, fmt.Errorf("%q is not a CIDR such as 127.0.0.0/8: %w", s, err)
		}
		p.allow = append(p.allow, prefix.Masked())
	}
	return p, nil
}

// Allowed reports whether addr may be dialled.
func (p AddressPolicy) Allowed(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, a := range p.allow {
		if a.Contains(addr) {
			return true
		}
	}
	for _, f := range forbidden {
		if f.Contains(addr) {
			return false
		}
	}
	return addr.IsGlobalUnicast()
}

// control runs after name resolution, on the address the dialer is about to
// connect to: checking here, rather than resolving the name beforehand,
// leaves no gap for DNS rebinding between check and connect.
func (p AddressPolicy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	if !p.Allowed(ap.Addr()) {
		return fmt.Errorf("%w: %s is private, loopback or link-local (allow it with ONCELEDGER_WEBHOOK_ALLOW_CIDRS)", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}

// DialContext dials like net.Dialer but refuses forbidden addresses.
func (p AddressPolicy) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control}
	return d.DialContext
}
