package delivery

import (
	"errors"

	"github.com/heraldhq/herald/apierr"
)

// Sentinels of a failed delivery. Every failure of [Service.Deliver] (and
// every failure [Client.Deliver] reads from the API) wraps at most one of
// them; [Classify] gives each its code and whether it is terminal. Each is
// an *apierr.Error of its code, so the API answers it with the code's one
// status like any other error.
var (
	// ErrNoChannel: the tenant has no enabled channel of the kind the
	// request asks for. Wrapped with the kind (`delivery: no enabled
	// channel: "email"`). Terminal: retrying cannot help until the tenant
	// enables a channel. Decided before any attempt is recorded.
	ErrNoChannel = apierr.New(apierr.CodeNoChannel, "delivery: no enabled channel")
	// ErrInvalidRequest: the request misses a field or holds a malformed
	// one. The error also holds a *apierr.ValidationError naming each
	// field. Terminal.
	ErrInvalidRequest = apierr.New(apierr.CodeValidationFailed, "delivery: invalid request")
	// ErrNoAddress: a send with no recipient at all (the engine's code for
	// a run without a subscriber whose send names no "to"). Terminal. A
	// recipient without an address of the kind is no error: Deliver
	// answers a skipped Result (ReasonNoAddress).
	ErrNoAddress = apierr.New(apierr.CodeNoAddress, "delivery: no address")
	// ErrInvalidContent: the request's content is not the content of its
	// channel kind (a required field missing, an unknown field, a value of
	// the wrong type, more than MaxContentBytes). The error also holds a
	// *apierr.ValidationError naming each field. Terminal: decided before
	// any attempt is recorded.
	ErrInvalidContent = apierr.New(apierr.CodeInvalidContent, "delivery: invalid content")
	// ErrProviderRejected: the provider refused the recipient or the
	// message for good (an SMTP 5xx to RCPT, an "invalid recipient"
	// answer): provider.ErrRejected. Terminal, without failover to
	// another channel; the failure is recorded.
	ErrProviderRejected = apierr.New(apierr.CodeProviderRejected, "delivery: provider rejected the message")
	// ErrProviderUnavailable: no channel of the kind took the message:
	// each one tried failed in a way that proves nothing was sent
	// (provider.ErrNotSent), or the one tried last gave no answer on a
	// message it may have taken (provider.ErrOutcomeUnknown). Transient:
	// a later request with the same key makes a new attempt (on the same
	// channel after an unknown outcome).
	ErrProviderUnavailable = apierr.New(apierr.CodeProviderUnavailable, "delivery: provider unavailable")
	// ErrInProgress: another attempt of the same key is in flight and did
	// not finish within the wait (see Config.InFlightWait). Transient.
	ErrInProgress = apierr.New(apierr.CodeDeliveryInProgress, "delivery: an attempt of this key is in flight")
)

// classes lists every sentinel with whether it is terminal; its code is
// its own (a sentinel's code is unique).
var classes = []struct {
	kind     *apierr.Error
	terminal bool
}{
	{ErrNoChannel, true},
	{ErrNoAddress, true},
	{ErrProviderRejected, true},
	{ErrInvalidRequest, true},
	{ErrInvalidContent, true},
	{ErrProviderUnavailable, false},
	{ErrInProgress, false},
}

// Failure is the classification of a failed delivery.
type Failure struct {
	// Code names the failure: a sentinel's code, an error code the API
	// the Client called answered, or (transient, all three) the Client's
	// own apierr.CodeDeliveryUnreachable (no answer) and
	// apierr.CodeDeliveryInvalidAnswer (a 200 that is not a Result), and
	// apierr.CodeDeliveryFailed for a failure nothing else names.
	Code string
	// Terminal: a repeat of the request cannot succeed, so the run fails
	// with Code. Otherwise the send step is retried later with the same
	// key.
	Terminal bool
	// Message describes the failure (the error's text).
	Message string
}

// Classify classifies an error of [Service.Deliver] or [Client.Deliver]:
// an *Error classifies itself; an error wrapping a sentinel gets that
// sentinel's code and terminality; any other error is
// apierr.CodeDeliveryFailed, transient. A context error is classified like any other: the caller
// that stops tells it apart from a failure by its own context.
func Classify(err error) Failure {
	var e *Error
	if errors.As(err, &e) {
		return Failure{Code: e.Code, Terminal: e.Terminal, Message: err.Error()}
	}
	for _, c := range classes {
		if errors.Is(err, c.kind) {
			return Failure{Code: c.kind.Code, Terminal: c.terminal, Message: err.Error()}
		}
	}
	return Failure{Code: apierr.CodeDeliveryFailed, Message: err.Error()}
}

// Error is a failure classified where it was decided: the Client returns
// one for every failure the API answers. It wraps the sentinel its code
// names, if any, so errors.Is works on either side of the API.
type Error struct {
	// Code, Terminal and Message are what Classify returns for it.
	Code     string
	Terminal bool
	Message  string
	kind     error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel Code names, or nil.
func (e *Error) Unwrap() error { return e.kind }

// sentinelOf returns the sentinel of code and whether it is terminal; ok
// is false for a code no sentinel has.
func sentinelOf(code string) (kind error, terminal, ok bool) {
	for _, c := range classes {
		if c.kind.Code == code {
			return c.kind, c.terminal, true
		}
	}
	return nil, false, false
}
