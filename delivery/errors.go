package delivery

import "errors"

// Sentinels of a failed delivery. Every failure of [Service.Deliver] (and
// every failure [Client.Deliver] reads from the API) wraps at most one of
// them; [Classify] gives each its code and whether it is terminal, and the
// API maps each to a status.
var (
	// ErrNoChannel: the tenant has no enabled channel of the kind the
	// request asks for. Wrapped with the kind (`delivery: no enabled
	// channel: "email"`). Terminal: retrying cannot help until the tenant
	// enables a channel. Decided before any attempt is recorded.
	ErrNoChannel = errors.New("delivery: no enabled channel")
	// ErrInvalidRequest: the request misses a field or holds a malformed
	// one. The error also holds a *apierr.ValidationError naming each
	// field. Terminal.
	ErrInvalidRequest = errors.New("delivery: invalid request")
	// ErrNoAddress: a send with no recipient at all (the engine's code for
	// a run without a subscriber whose send names no "to"). Terminal. A
	// recipient without an address of the kind is no error: Deliver
	// answers a skipped Result (ReasonNoAddress).
	ErrNoAddress = errors.New("delivery: no address")
	// ErrInvalidContent: the request's content is not the content of its
	// channel kind (a required field missing, an unknown field, a value of
	// the wrong type, more than MaxContentBytes). The error also holds a
	// *apierr.ValidationError naming each field. Terminal: decided before
	// any attempt is recorded.
	ErrInvalidContent = errors.New("delivery: invalid content")
	// ErrProviderRejected: the provider refused the recipient or the
	// message for good (an SMTP 5xx to RCPT, an "invalid recipient"
	// answer): provider.ErrRejected. Terminal, without failover to
	// another channel; the failure is recorded.
	ErrProviderRejected = errors.New("delivery: provider rejected the message")
	// ErrProviderUnavailable: no channel of the kind took the message:
	// each one tried failed in a way that proves nothing was sent
	// (provider.ErrNotSent), or the one tried last gave no answer on a
	// message it may have taken (provider.ErrOutcomeUnknown). Transient:
	// a later request with the same key makes a new attempt (on the same
	// channel after an unknown outcome).
	ErrProviderUnavailable = errors.New("delivery: provider unavailable")
	// ErrInProgress: another attempt of the same key is in flight and did
	// not finish within the wait (see Config.InFlightWait). Transient.
	ErrInProgress = errors.New("delivery: an attempt of this key is in flight")
)

// Codes of failed deliveries: the API's error codes of POST /v1/deliver,
// the codes a run fails with or a send step's retry records, and (for
// provider failures) the codes of DeliveryFailed events.
const (
	CodeNoChannel           = "no_channel"
	CodeInvalidRequest      = "validation_failed"
	CodeNoAddress           = "no_address"
	CodeInvalidContent      = "invalid_content"
	CodeProviderRejected    = "provider_rejected"
	CodeProviderUnavailable = "provider_unavailable"
	CodeInProgress          = "delivery_in_progress"
	// CodeFailed is the code of a failure no sentinel names (an internal
	// error, or an API answer without a code). Transient.
	CodeFailed = "delivery_failed"
	// CodeUnreachable: the Client could not reach the API. Transient.
	CodeUnreachable = "delivery_unreachable"
	// CodeInvalidAnswer: the API answered 200 with a body that is not a
	// Result. Transient.
	CodeInvalidAnswer = "delivery_invalid_answer"
)

// classes lists every sentinel with its code and whether it is terminal.
// A sentinel's code is unique.
var classes = []struct {
	kind     error
	code     string
	terminal bool
}{
	{ErrNoChannel, CodeNoChannel, true},
	{ErrNoAddress, CodeNoAddress, true},
	{ErrProviderRejected, CodeProviderRejected, true},
	{ErrInvalidRequest, CodeInvalidRequest, true},
	{ErrInvalidContent, CodeInvalidContent, true},
	{ErrProviderUnavailable, CodeProviderUnavailable, false},
	{ErrInProgress, CodeInProgress, false},
}

// Failure is the classification of a failed delivery.
type Failure struct {
	// Code names the failure (one of the Code constants, or an error code
	// of the API the Client called).
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
// sentinel's code and terminality; any other error is CodeFailed,
// transient. A context error is classified like any other: the caller
// that stops tells it apart from a failure by its own context.
func Classify(err error) Failure {
	var e *Error
	if errors.As(err, &e) {
		return Failure{Code: e.Code, Terminal: e.Terminal, Message: err.Error()}
	}
	for _, c := range classes {
		if errors.Is(err, c.kind) {
			return Failure{Code: c.code, Terminal: c.terminal, Message: err.Error()}
		}
	}
	return Failure{Code: CodeFailed, Message: err.Error()}
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
		if c.code == code {
			return c.kind, c.terminal, true
		}
	}
	return nil, false, false
}
