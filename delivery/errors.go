package delivery

import "errors"

// ErrNoChannel is returned by [Select] when the tenant has no enabled channel
// of the kind a send step asks for. It is wrapped with the kind
// (`delivery: no enabled channel: "email"`). The failure is terminal:
// retrying cannot help until the tenant enables a channel.
var ErrNoChannel = errors.New("delivery: no enabled channel")

// Sentinels of [Service.Deliver]. Each failure of a delivery wraps exactly
// one of them (or ErrNoChannel); the API maps them to statuses.
var (
	// ErrInvalidRequest: the request misses a field or holds a malformed
	// one. The error is a *RequestError naming each field. Terminal.
	ErrInvalidRequest = errors.New("delivery: invalid request")
	// ErrNoAddress: the recipient subscriber is unknown, or has no address
	// of the channel's kind (or its first address is not a valid one).
	// Terminal: decided before any attempt is recorded.
	ErrNoAddress = errors.New("delivery: no address")
	// ErrProviderRejected: the provider refused the message for good (an
	// SMTP 5xx reply), or the channel's config cannot work. Terminal for
	// the attempt; the failure is recorded.
	ErrProviderRejected = errors.New("delivery: provider rejected the message")
	// ErrProviderUnavailable: the provider could not take the message now
	// (an SMTP 4xx reply, a network error, a timeout). Transient: a later
	// request with the same key makes a new attempt.
	ErrProviderUnavailable = errors.New("delivery: provider unavailable")
	// ErrInProgress: another attempt of the same key is in flight and did
	// not finish within the wait (see Config.InFlightWait). Transient.
	ErrInProgress = errors.New("delivery: an attempt of this key is in flight")
)
