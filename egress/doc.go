// Package egress decides which network addresses Herald may connect to on a
// tenant's behalf, and provides the dialer and HTTP client that enforce it.
//
// Every outbound connection to a tenant-supplied destination (a Bridge
// webhookUrl, a webhook URL, every destination field of the channel
// catalog) goes through one [Policy]. With AllowPrivate false the policy
// refuses loopback, private, link-local, unspecified, shared (CGNAT),
// multicast, broadcast and reserved addresses, IPv4-mapped and NAT64 forms
// included (see [Policy.Check]).
//
// # Basics
//
// The check runs in the dialer's Control hook, on the address actually
// being connected to after DNS resolution: a name that resolved to a public
// address when the tenant configured it and to 10.0.0.1 at send time (DNS
// rebinding) is still refused. [Policy.CheckHost] is the earlier, advisory
// check at configuration time (a 422 instead of a failed send).
//
// A host is read as the address it spells, in any form a resolver reads
// ([ParseHost]: 2130706433, 127.1, 0x7f000001, 127.0.0.1.), both by
// CheckHost and by the dialer, so that no spelling passes the check as a
// name and then fails at send as a lookup error to retry.
//
// [Policy.Client] returns an *http.Client that never follows redirects (a
// 3xx comes back to the caller as is) and never uses an HTTP proxy from the
// environment (a proxy would be the address checked, not the destination).
//
// # Caveats
//
// A refused dial is a *[RefusedError] matching [ErrRefused]; retrying it
// cannot succeed. Its text names the refused address: it is for the
// operator's log, not for the tenant.
//
// The zero Policy refuses private destinations. Embedded (development) mode
// turns AllowPrivate on by default (HERALD_ALLOW_PRIVATE_EGRESS).
package egress
