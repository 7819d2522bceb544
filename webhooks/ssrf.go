package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onceledger/onceledger/ledger"
)

// ErrForbiddenAddress is returned when a webhook target resolves to an
// address deliveries may not reach.
var ErrForbiddenAddress = errors.New("webhook target address is not allowed")

// forbidden are the ranges a webhook may not reach unless allowed: a URL
// registered by a tenant must not become a way into the operator's network
// (cloud metadata at 169.254.169.254, databases on 10.x, the worker itself).
// IPv6 ranges that carry an IPv4 address, or hand the packet to a relay or
// translator that reaches one, are refused whole: which IPv4 address they
// end at depends on the relay, not on the URL. 6to4 is the exception (see
// Allowed).
var forbidden = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"2001::/32", "2001:db8::/32", "fc00::/7", "fe80::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// rangeNames say what the IPv6 ranges that carry an IPv4 address are.
var rangeNames = map[netip.Prefix]string{
	netip.MustParsePrefix("::/96"):           "an IPv4-compatible IPv6 address (::/96, deprecated), which some systems route to the IPv4 address it holds",
	netip.MustParsePrefix("::ffff:0:0:0/96"): "an IPv4-translated IPv6 address (::ffff:0:0:0/96)",
	netip.MustParsePrefix("64:ff9b::/96"):    "a NAT64 address (64:ff9b::/96), which a translator turns into the IPv4 address it holds",
	netip.MustParsePrefix("64:ff9b:1::/48"):  "a local-use NAT64 address (64:ff9b:1::/48), which a translator turns into an IPv4 address",
	netip.MustParsePrefix("100::/64"):        "a discard-only address (100::/64)",
	netip.MustParsePrefix("2001::/32"):       "a Teredo address (2001::/32), tunnelled through a relay to an IPv4 address",
}

// sixToFour is 6to4 (RFC 3056): the 32 bits after the prefix are the IPv4
// address the packet is tunnelled to.
var sixToFour = netip.MustParsePrefix("2002::/16")

// sixToFourAddr is the IPv4 address a 6to4 address holds.
func sixToFourAddr(addr netip.Addr) (netip.Addr, bool) {
	if !addr.Is6() || !sixToFour.Contains(addr) {
		return netip.Addr{}, false
	}
	b := addr.As16()
	return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
}

// AddressPolicy decides which addresses and ports webhook deliveries may
// dial.
type AddressPolicy struct {
	allow []netip.Prefix
	// ports, when not empty, are the only ports targets may use.
	ports []uint16
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

// WithPorts returns p limited to the ports in list, comma-separated
// (ONCELEDGER_WEBHOOK_ALLOW_PORTS). An empty list allows any port.
func (p AddressPolicy) WithPorts(list string) (AddressPolicy, error) {
	var ports []uint16
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil || n == 0 {
			return AddressPolicy{}, fmt.Errorf("%q is not a port from 1 to 65535", s)
		}
		ports = append(ports, uint16(n))
	}
	p.ports = ports
	return p, nil
}

// portAllowed reports whether port (decimal, as in a URL) may be dialled.
func (p AddressPolicy) portAllowed(port string) bool {
	if len(p.ports) == 0 {
		return true
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return false
	}
	return slices.Contains(p.ports, uint16(n))
}

// validPort reports whether port (decimal, as in a URL) is one a
// connection can be made to. A URL parser takes any digits: 0 and 99999
// parse.
func validPort(port string) bool {
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n > 0
}

// portList is the allowed ports, for messages.
func (p AddressPolicy) portList() string {
	s := make([]string, len(p.ports))
	for i, n := range p.ports {
		s[i] = strconv.Itoa(int(n))
	}
	return strings.Join(s, ", ")
}

// Allowed reports whether addr may be dialled. A zone is ignored: it names
// an interface, not a range, and netip.Prefix.Contains never holds an
// address that has one, which would let fd00::1%eth0 pass as public.
func (p AddressPolicy) Allowed(addr netip.Addr) bool {
	addr = addr.WithZone("").Unmap()
	for _, a := range p.allow {
		if a.Contains(addr) {
			return true
		}
	}
	return public(addr)
}

// public reports whether addr is outside every forbidden range. A 6to4
// address is as public as the IPv4 address it holds, whatever the policy
// allows: allowing 127.0.0.0/8 allows the loopback interface, not a
// tunnel to it.
func public(addr netip.Addr) bool {
	for _, f := range forbidden {
		if f.Contains(addr) {
			return false
		}
	}
	if v4, ok := sixToFourAddr(addr); ok && !public(v4) {
		return false
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
	if ap.Addr().Zone() != "" {
		return fmt.Errorf("%w: %s is scoped to an interface of this machine", ErrForbiddenAddress, ap.Addr())
	}
	if !p.Allowed(ap.Addr()) {
		return fmt.Errorf("%w: %s is private, loopback or link-local (allow it with ONCELEDGER_WEBHOOK_ALLOW_CIDRS)", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}

// DialContext dials like net.Dialer but refuses forbidden addresses. A host
// that is an address in a form other than the standard one (127.1,
// 2130706433, 0x7f.0.0.1) is refused before anything is resolved: it is an
// address, not a name for the DNS.
func (p AddressPolicy) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrForbiddenAddress, addr)
		}
		if !validPort(port) {
			return nil, fmt.Errorf("%w: port %s is not a port from 1 to 65535", ErrForbiddenAddress, port)
		}
		// Checked here as well as at registration: the list may have
		// shrunk since the endpoint was created.
		if !p.portAllowed(port) {
			return nil, fmt.Errorf("%w: port %s is not in ONCELEDGER_WEBHOOK_ALLOW_PORTS (%s)", ErrForbiddenAddress, port, p.portList())
		}
		if ip, standard, ok := hostAddress(host); ok && ip.Zone() != "" {
			return nil, fmt.Errorf("%w: %s is scoped to an interface of this machine", ErrForbiddenAddress, host)
		} else if ok && !standard {
			return nil, fmt.Errorf("%w: %s is the address %s in a non-standard form", ErrForbiddenAddress, host, ip)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// checkURL refuses an endpoint URL whose host deliveries may not reach,
// as far as can be told without resolving a name: an address outside the
// policy, an address in a non-standard form, or localhost. A name is
// checked again, against what it resolves to, each time it is dialled.
func (p AddressPolicy) checkURL(field, raw string) *ledger.Error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // the command's validation reports it
	}
	host := u.Hostname()
	refuse := func(format string, args ...any) *ledger.Error {
		e := ledger.Errorf(ledger.CodeInvalidCommand, "%s: "+format, append([]any{field}, args...)...)
		e.Details = map[string]any{"field": field, "host": host}
		return e
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	if !validPort(port) {
		e := refuse("port %s is not a port from 1 to 65535", port)
		e.Details["port"] = port
		return e
	}
	if !p.portAllowed(port) {
		e := refuse("port %s is not one webhook targets may use (%s, set by ONCELEDGER_WEBHOOK_ALLOW_PORTS)", port, p.portList())
		e.Details["port"] = port
		return e
	}
	ip, standard, ok := hostAddress(host)
	if !ok {
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		if name == "localhost" || strings.HasSuffix(name, ".localhost") {
			if p.Allowed(netip.MustParseAddr("127.0.0.1")) {
				return nil
			}
			return refuse("host %q is the loopback interface of the worker itself; webhook targets must be public addresses (allow a range with ONCELEDGER_WEBHOOK_ALLOW_CIDRS)", host)
		}
		return nil
	}
	if ip.Zone() != "" {
		return refuse("host %q is scoped to the interface %q of the worker's machine; webhook targets must be public addresses, which have no zone", host, ip.Zone())
	}
	if !standard {
		return refuse("host %q is the address %s written in a non-standard form, which resolvers read differently; write it as %s", host, ip.Unmap(), ip.Unmap())
	}
	if !p.Allowed(ip) {
		return refuse("host %s is %s; webhook targets must be public addresses (allow a range with ONCELEDGER_WEBHOOK_ALLOW_CIDRS)", ip, rangeName(ip))
	}
	return nil
}

// rangeName says which forbidden range holds addr.
func rangeName(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if v4, ok := sixToFourAddr(addr); ok && !public(v4) {
		return "a 6to4 address of " + v4.String() + ", which is " + rangeName(v4)
	}
	for _, f := range forbidden {
		if f.Contains(addr) {
			if name, ok := rangeNames[f]; ok {
				return name
			}
			switch {
			case addr.IsLoopback():
				return "a loopback address (" + f.String() + ")"
			case addr.IsPrivate():
				return "a private address (" + f.String() + ")"
			case addr.IsLinkLocalUnicast():
				return "a link-local address (" + f.String() + "), where cloud metadata services answer"
			}
			return "in the reserved range " + f.String()
		}
	}
	return "not a public unicast address"
}

// hostAddress reads host as an IP address in any form a resolver accepts:
// an IPv6 literal, a dotted quad, or the older IPv4 forms inet_aton reads
// (127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1). standard is false for the
// older forms, for an IPv4-mapped IPv6 literal and for a scoped one
// (fe80::1%eth0, whose zone is kept in addr); ok is false for a name.
func hostAddress(host string) (addr netip.Addr, standard, ok bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, !a.Is4In6() && a.Zone() == "", true
	}
	h := strings.TrimSuffix(host, ".")
	if h == "" {
		return netip.Addr{}, false, false
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false, false
	}
	var vals []uint64
	for _, part := range parts {
		v, ok := inetAtonPart(part)
		if !ok {
			return netip.Addr{}, false, false
		}
		vals = append(vals, v)
	}
	// Every part but the last is one byte; the last fills the rest.
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false, false
		}
		n = n<<8 | v
	}
	rest := 8 * (5 - len(vals))
	last := vals[len(vals)-1]
	if rest < 64 && last >= 1<<rest {
		return netip.Addr{}, false, false
	}
	n = n<<rest | last
	if n > 0xffffffff {
		return netip.Addr{}, false, false
	}
	a := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	return a, false, true
}

// inetAtonPart reads one part of an inet_aton address: 0x hexadecimal, a
// leading 0 octal, else decimal.
func inetAtonPart(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) > 1 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true // "0x" is 0 to inet_aton
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, base, 64)
	return v, err == nil
}
