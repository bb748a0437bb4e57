package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// Default bounds of the dialer and client built by a [Policy].
const (
	// DefaultDialTimeout bounds one TCP connect.
	DefaultDialTimeout = 10 * time.Second
	// DefaultTLSHandshakeTimeout bounds one TLS handshake.
	DefaultTLSHandshakeTimeout = 10 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for an answer's headers
	// once the request is written.
	DefaultResponseHeaderTimeout = 60 * time.Second
	// DefaultClientTimeout bounds a whole exchange of a [Policy.Client].
	DefaultClientTimeout = 60 * time.Second
	// lookupTimeout bounds the DNS lookup of [Policy.CheckHost].
	lookupTimeout = 5 * time.Second
)

// Policy decides which addresses outbound connections may reach. The zero
// Policy refuses every internal address. A Policy is a value: safe for
// concurrent use.
type Policy struct {
	// AllowPrivate turns the check off: every address may be dialled
	// (development, a trusted network). HERALD_ALLOW_PRIVATE_EGRESS.
	AllowPrivate bool
	// Resolver resolves names for CheckHost and the dialer. Nil:
	// net.DefaultResolver. Whatever it answers, the dialer checks the
	// address it connects to.
	Resolver *net.Resolver
}

// special ranges refused besides those netip classifies itself.
var special = []struct {
	prefix netip.Prefix
	name   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},    // "this network"
	{netip.MustParsePrefix("100.64.0.0/10"), "shared"},     // CGNAT, RFC 6598
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},    // IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved"},    // TEST-NET-1
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},   // benchmarking
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved"}, // TEST-NET-2
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved"},  // TEST-NET-3
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},     // and 255.255.255.255, broadcast
	{netip.MustParsePrefix("::/96"), "reserved"},           // IPv4-compatible (deprecated)
	{netip.MustParsePrefix("100::/64"), "reserved"},        // discard
	{netip.MustParsePrefix("2001:db8::/32"), "reserved"},   // documentation
	{netip.MustParsePrefix("fec0::/10"), "private"},        // site-local (deprecated)
}

// embedding ranges carry an IPv4 address in their low 32 bits (NAT64) or in
// bits 16-48 (6to4): the IPv4 address inside is checked too.
var (
	nat64  = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48")}
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Check returns nil when ip may be dialled, else a *RefusedError. IPv4
// addresses written as IPv6 (::ffff:a.b.c.d, NAT64, 6to4) are judged by the
// IPv4 address inside. With AllowPrivate every valid address passes.
func (p Policy) Check(ip netip.Addr) error {
	if !ip.IsValid() {
		return &RefusedError{Addr: ip, Range: "invalid"}
	}
	if p.AllowPrivate {
		return nil
	}
	if r := refusedRange(ip.WithZone("")); r != "" {
		return &RefusedError{Addr: ip, Range: r}
	}
	return nil
}

func refusedRange(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, s := range special {
		if s.prefix.Contains(ip) {
			return s.name
		}
	}
	if ip.Is6() {
		b := ip.As16()
		for _, n := range nat64 {
			if n.Contains(ip) {
				return refusedRange(netip.AddrFrom4([4]byte(b[12:16])))
			}
		}
		if sixTo4.Contains(ip) {
			return refusedRange(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return ""
}

// control is the dialer's Control hook: it checks the address about to be
// connected to, after resolution.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Range: fmt.Sprintf("unparsable (%q)", address)}
	}
	return p.Check(ap.Addr())
}

// Dialer returns a dialer that refuses, at connect time, every address the
// policy refuses (a *RefusedError wrapped in a *net.OpError). timeout ≤ 0
// means DefaultDialTimeout.
func (p Policy) Dialer(timeout time.Duration) *Dialer {
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	return &Dialer{policy: p, net: net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: p.control, Resolver: p.Resolver}}
}

// Dialer connects through a [Policy]. Before dialling, it reads the host as
// [ParseHost] does: an address in any spelling (2130706433, 127.1,
// 127.0.0.1.) is dialled as the address it means, so the check after
// resolution sees it and a refusal is final, instead of the lookup failing
// as a name (or the system resolver reaching the address unchecked), and a
// localhost name is refused without asking any resolver.
type Dialer struct {
	policy Policy
	net    net.Dialer
}

// DialContext connects to address on the named network (see
// net.Dialer.DialContext) unless the policy refuses it.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return d.net.DialContext(ctx, network, address) // net reports the error
	}
	ip, name, err := ParseHost(host)
	switch {
	case err != nil:
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	case ip.IsValid():
		address = net.JoinHostPort(ip.String(), port)
	case !d.policy.AllowPrivate && isLocalhost(name):
		return nil, &net.OpError{Op: "dial", Net: network, Err: &RefusedError{Range: "loopback name"}}
	}
	return d.net.DialContext(ctx, network, address)
}

// Transport returns an HTTP transport dialling through [Policy.Dialer], with
// bounded handshake and header timeouts and no proxy (the proxy, not the
// destination, would be the address checked). Tune its pool as needed.
func (p Policy) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           p.Dialer(0).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   DefaultTLSHandshakeTimeout,
		ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// Client returns an HTTP client on [Policy.Transport] that never follows a
// redirect: a 3xx answer is returned to the caller as is, and its Location
// is never requested. timeout ≤ 0 means DefaultClientTimeout.
func (p Policy) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultClientTimeout
	}
	return &http.Client{Transport: p.Transport(), Timeout: timeout, CheckRedirect: NoRedirect}
}

// NoRedirect is an http.Client CheckRedirect that follows no redirect.
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// CheckHost is the check at configuration time of a destination host (a
// name or an IP literal in any spelling [ParseHost] reads, IPv6 with or
// without brackets): nil when the policy allows it, an error matching
// ErrRefused when host is an address the policy refuses, a malformed
// numeric host, a localhost name, or a name whose every address the policy
// refuses. A name that does not resolve now passes: the dial-time check
// still holds.
func (p Policy) CheckHost(ctx context.Context, host string) error {
	if p.AllowPrivate {
		return nil
	}
	ip, name, err := ParseHost(host)
	switch {
	case err != nil:
		return err
	case ip.IsValid():
		return p.Check(ip)
	case isLocalhost(name):
		return &RefusedError{Range: "loopback name"}
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ips, err := r.LookupNetIP(ctx, "ip", name)
	if err != nil || len(ips) == 0 {
		return nil
	}
	var first error
	for _, ip := range ips {
		err := p.Check(ip)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// RequireTLS returns rt when the policy allows private addresses, else a
// round tripper that refuses every request that is not https with a
// *RefusedError (Range "plain http"): outside development, signed calls
// and their answers do not cross networks in clear.
func (p Policy) RequireTLS(rt http.RoundTripper) http.RoundTripper {
	if p.AllowPrivate {
		return rt
	}
	return tlsOnly{rt}
}

type tlsOnly struct{ next http.RoundTripper }

func (t tlsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, &RefusedError{Range: "plain http"}
	}
	return t.next.RoundTrip(req)
}
