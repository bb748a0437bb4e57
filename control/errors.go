package control

import (
	"errors"
	"fmt"
)

// Kinds of failure. Every error control returns for bad input or state
// wraps one of these; httpapi maps them to statuses.
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
	// ErrBusy: concurrent writers kept winning the same aggregate (503).
	ErrBusy = errors.New("too much contention, try again")
	// ErrUnavailable: a system the command depends on (the tenant's
	// Bridge, a provider) failed or refused (502).
	ErrUnavailable = errors.New("upstream unavailable")
)

// Error is a failure with a stable code for API clients. Kind is one of
// the sentinels above; errors.Is(err, Kind) holds.
type Error struct {
	Kind    error
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldProblem names one bad field by its dotted path, e.g. config.port
// or contacts.email[0].
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// ValidationError reports every bad field of a command at once. It
// wraps ErrInvalid.
type ValidationError struct {
	Code     string
	Problems []FieldProblem
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Field + " " + e.Problems[0].Problem
	}
	return fmt.Sprintf("%d fields are invalid", len(e.Problems))
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Problems collects field problems while a command is validated.
type Problems []FieldProblem

// Add records a problem with field.
func (p *Problems) Add(field, format string, args ...any) {
	*p = append(*p, FieldProblem{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// Err returns a *ValidationError when any problem was recorded, else nil.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Code: "validation_failed", Problems: p}
}
