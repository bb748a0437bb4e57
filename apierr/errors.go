package apierr

import (
	"errors"
	"fmt"
)

// Kinds of failure. Every error a command returns for bad input or state
// wraps exactly one of these; httpapi maps each to one status.
var (
	// ErrNotFound: the resource does not exist for this tenant (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the resource's state forbids the command (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the command's fields are invalid (422). Usually inside a
	// *ValidationError naming each field.
	ErrInvalid = errors.New("validation failed")
	// ErrBadRequest: the command is malformed as a whole (400).
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthenticated: the credentials are missing, malformed, unknown
	// or revoked (401).
	ErrUnauthenticated = errors.New("invalid API key")
	// ErrBusy: concurrent writers kept winning the same aggregate (503).
	ErrBusy = errors.New("too much contention, try again")
	// ErrUnavailable: a system the command depends on (the tenant's
	// Bridge, a provider) failed or refused (502).
	ErrUnavailable = errors.New("upstream unavailable")
)

// Error is a failure with a stable code for API clients. Kind is one of
// the kinds above; errors.Is(err, Kind) holds. Message is shown to the
// client as it is: it must name nothing the client did not send or may
// not see.
//
// A lower layer declares its sentinels as *Error too (a read of nothing,
// a subject the server would refuse), so the HTTP layer answers them by
// their kind and code like any other, without importing that layer.
type Error struct {
	Kind    error
	Code    string
	Message string
	// Public, when set, is all a client reads of an error that wraps
	// this one, in place of its text: for a failure found below the edge
	// whose text, and what wraps it (a subject, a key), is for the log.
	Public string
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

// New returns an *Error with code and message, of the kind of the
// code's status in the table: a code is answered with one status, so its
// kind is never chosen by the caller.
func New(code, message string) *Error {
	return &Error{Kind: kindOf(Status(code)), Code: code, Message: message}
}

// Errorf returns an *Error with code and a formatted message, of the kind
// of the code's status, as New.
func Errorf(code, format string, args ...any) *Error {
	return New(code, fmt.Sprintf(format, args...))
}

// Missing returns an *Error of kind ErrNotFound with code and message,
// whatever the code's own status: for a read of something that does not
// exist yet, where the code says why. It is the one road by which a code
// is answered with a status other than its own, and GET /v1/bridge its
// one user: reading a binding not yet made is reading a missing resource
// (404), while a command that needs the binding is refused by the state
// (CodeBridgeNotConfigured's 409).
func Missing(code, message string) *Error {
	return &Error{Kind: ErrNotFound, Code: code, Message: message}
}

// Masked returns an *Error with code and message, of the kind of the
// code's status, as New, that a client reads as public alone, whatever
// wraps it: for a sentinel of a lower layer whose text, and what its
// callers wrap around it, is for the log.
func Masked(code, message, public string) *Error {
	e := New(code, message)
	e.Public = public
	return e
}

// FieldProblem names one bad field by its dotted path, e.g. config.port
// or contacts.email[0], and what is wrong with it.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// ValidationError reports every bad field of a command at once. It wraps
// ErrInvalid. Code is "validation_failed" unless a command names a more
// precise one (e.g. "invalid_payload").
type ValidationError struct {
	Code     string
	Problems []FieldProblem
	// Message, when set, is the error's text; otherwise the problems
	// say it (see Error). A sentinel of a lower layer sets it.
	Message string
}

func (e *ValidationError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	if len(e.Problems) == 1 {
		return e.Problems[0].Field + " " + e.Problems[0].Problem
	}
	return fmt.Sprintf("%d fields are invalid", len(e.Problems))
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Problems collects field problems while a command is validated. The zero
// value is empty and ready to use.
type Problems []FieldProblem

// Add records a problem with field.
func (p *Problems) Add(field, format string, args ...any) {
	*p = append(*p, FieldProblem{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// Err returns a *ValidationError with code "validation_failed" when any
// problem was recorded, else nil.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Code: CodeValidationFailed, Problems: p}
}
