package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// ParseHost says what a destination host means, as the most liberal
// resolver on the road would read it, so that no spelling of an address
// slips past the policy as a "name":
//
//   - an IP literal in any form inet_aton(3) and URL parsers read: 127.0.0.1,
//     2130706433, 127.1, 0x7f000001, 0177.0.0.1, 0 (each part decimal, octal
//     with a leading 0, or hex with 0x; the last part fills the bytes left);
//     IPv6 with or without brackets, with or without a zone;
//   - a trailing dot (the DNS root) changes nothing: 127.0.0.1. is
//     127.0.0.1, localhost. is localhost.
//
// It returns the address (valid) or else the DNS name, lowercased, without
// its trailing dot. A host whose last label is a number (WHATWG URL's "ends
// in a number": digits, or 0x and hex digits) but that is no IPv4 address
// (1.2.3.256, 1.2.3.4.5, 08.0.0.1), a host with a colon that is no IPv6
// address, and an empty host are a *RefusedError: resolvers disagree on
// them, and none is a name anyone can register.
func ParseHost(host string) (addr netip.Addr, name string, err error) {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, "", nil
	}
	trimmed := strings.TrimSuffix(host, ".")
	if trimmed == "" || strings.HasSuffix(trimmed, ".") {
		return netip.Addr{}, "", &RefusedError{Range: "empty or malformed host"}
	}
	if strings.Contains(trimmed, ":") {
		return netip.Addr{}, "", &RefusedError{Range: "malformed IPv6 host"}
	}
	if ip, err := netip.ParseAddr(trimmed); err == nil {
		return ip, "", nil
	}
	labels := strings.Split(trimmed, ".")
	if !isNumber(labels[len(labels)-1]) {
		return netip.Addr{}, strings.ToLower(trimmed), nil
	}
	ip, ok := parseLegacyIPv4(labels)
	if !ok {
		return netip.Addr{}, "", &RefusedError{Range: "malformed numeric host"}
	}
	return ip, "", nil
}

// isNumber reports whether a label reads as a number to a URL parser:
// decimal digits, or 0x (0X) followed by hex digits (none is 0).
func isNumber(label string) bool {
	if l := strings.ToLower(label); strings.HasPrefix(l, "0x") {
		return strings.Trim(l[2:], "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// parseLegacyIPv4 reads 1 to 4 dot-separated numbers as inet_aton does.
func parseLegacyIPv4(parts []string) (netip.Addr, bool) {
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := parseNumber(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v = v<<8 | n
			continue
		}
		rest := uint(8 * (4 - i)) // the bits the last part fills
		if n >= 1<<rest {
			return netip.Addr{}, false
		}
		v = v<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseNumber reads one part of a legacy IPv4 address: 0x hex, 0 octal,
// else decimal; at most 32 bits.
func parseNumber(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}

// isLocalhost reports whether a DNS name (as ParseHost returns it) is
// loopback by definition (RFC 6761 §6.3): localhost and its subdomains.
func isLocalhost(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}
