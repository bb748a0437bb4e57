package provider

import (
	"errors"
	"fmt"
)

// The three ways a send fails. Each decides what delivery does next.
var (
	// ErrNotSent: the failure proves the message was not handed over
	// (connection refused, a TLS or authentication failure, an SMTP reply
	// before DATA, an HTTP 401/403/429/5xx answered before the provider
	// accepted the message, a config that cannot work). Delivery moves to
	// the next channel of the kind at once.
	ErrNotSent = errors.New("provider: not sent")
	// ErrOutcomeUnknown: the message may have been handed over, and no
	// answer says whether it was (a timeout or a broken connection after
	// the request was written, an SMTP failure after DATA). Delivery
	// retries on the same channel with the same idempotency key; it never
	// fails over, which could send twice.
	ErrOutcomeUnknown = errors.New("provider: outcome unknown")
	// ErrRejected: the provider refused the recipient or the message for
	// good (an SMTP 5xx to RCPT, an "invalid recipient" answer). Terminal
	// (provider_rejected), without failover.
	ErrRejected = errors.New("provider: rejected")
)

// ErrBadAddress marks a rejection (ErrRejected) that says the recipient's
// address does not exist and never will: an SMTP 5.1.1-class reply to
// RCPT, a provider's "invalid number" or "unregistered token" answer. It
// is not a fourth kind but a mark beside ErrRejected, which errors.Is
// sees as well: delivery suppresses the address (reason hard_bounce).
// Mark only answers that name the address itself, never a policy or
// content refusal, which another message to it could pass.
var ErrBadAddress = errors.New("provider: the address does not exist")

// Error is a failed send. Kind is one of ErrNotSent, ErrOutcomeUnknown and
// ErrRejected; errors.Is(err, Kind) holds. Public is what the tenant may
// see (a status or reply code and a fixed reason, never the provider's
// text, which may echo secrets or internal hosts); Err is the cause, for
// the operator's log.
type Error struct {
	Kind   error
	Public string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Public
	}
	return e.Public + ": " + e.Err.Error()
}

// Unwrap returns the kind and the cause, so errors.Is sees both.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Failf returns an *Error of kind with a formatted public message and the
// cause err (may be nil).
func Failf(kind error, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Public: fmt.Sprintf(format, args...), Err: err}
}

// PublicMessage returns the part of err a tenant may see: an *Error's
// Public, else a fixed text.
func PublicMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Public
	}
	return "the provider failed"
}
