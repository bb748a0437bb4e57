package httpapi

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
)

// Errors of the HTTP layer itself, each of its code. Those of the HTTP
// layer's own statuses (405, 413, 429) have no kind: they answer their
// code's status.
var (
	errInvalidJSON  = apierr.New(apierr.CodeInvalidJSON, "request body is not valid JSON")
	errBodyTooLarge = apierr.New(apierr.CodeBodyTooLarge, "request body is larger than 1 MiB")
	errNotFound     = apierr.New(apierr.CodeNotFound, "no such route")
	errMethod       = apierr.New(apierr.CodeMethodNotAllowed, "method not allowed on this route")
	errUnauthorized = apierr.New(apierr.CodeUnauthorized, "missing or invalid credentials")
	errNotReady     = apierr.New(apierr.CodeNotReady, "not ready")
	errRateLimited  = apierr.New(apierr.CodeRateLimited, "too many requests for this tenant; retry after the Retry-After header's seconds")
)

// kinds maps each kind of error to its default code, first match wins;
// the status is the code's, from apierr's table of codes. Every layer
// below wraps apierr's kinds (a read of nothing, a cursor not issued, a
// subject the server would refuse), so this table is apierr's and the
// deadline's. A *apierr.Error or *apierr.ValidationError supplies its own
// code (of the same status: its kind is its code's); one of no kind
// answers its code's status.
var kinds = []struct {
	kind error
	code string
}{
	{apierr.ErrUnauthenticated, apierr.CodeUnauthorized},
	{apierr.ErrBadRequest, apierr.CodeBadRequest},
	{apierr.ErrNotFound, apierr.CodeNotFound},
	{apierr.ErrConflict, apierr.CodeConflict},
	{apierr.ErrInvalid, apierr.CodeValidationFailed},
	{apierr.ErrBusy, apierr.CodeBusy},
	{apierr.ErrUnavailable, apierr.CodeUpstreamUnavailable},
	// Nothing else matched: an internal deadline passed (the event log
	// did not answer in time, a trigger's writes came later than its
	// arming allows). The request may be repeated (under its
	// transactionId for a trigger), so it is busy, not a 500.
	{context.DeadlineExceeded, apierr.CodeBusy},
}

// deadlineMessage is what a client reads of a passed deadline.
const deadlineMessage = "the request did not finish in time; repeat it after the Retry-After header's seconds"

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string                `json:"code"`
	Message string                `json:"message"`
	Details []apierr.FieldProblem `json:"details,omitempty"`
}

// describe turns an error into its status and body. Unknown errors are a
// 500 whose message says nothing of the cause.
func describe(err error) (int, errorDetail) {
	status := 0
	d := errorDetail{Message: err.Error()}
	for _, row := range kinds {
		if errors.Is(err, row.kind) {
			status, d.Code = apierr.Status(row.code), row.code
			if row.kind == context.DeadlineExceeded {
				d.Message = deadlineMessage
			}
			break
		}
	}
	var ce *apierr.Error
	if errors.As(err, &ce) && ce.Code != "" {
		if status == 0 {
			status = apierr.Status(ce.Code) // of no kind: the HTTP layer's own
		}
		d.Code = ce.Code
		if ce.Public != "" {
			d.Message = ce.Public
		}
	}
	var ve *apierr.ValidationError
	if errors.As(err, &ve) {
		d.Code = ve.Code
		var summary string
		d.Details, summary = boundDetails(ve.Problems)
		if ve.Message == "" {
			d.Message = summary
		}
	}
	if status == 0 {
		return apierr.Status(apierr.CodeInternal), errorDetail{Code: apierr.CodeInternal, Message: "internal error"}
	}
	return status, d
}

// Bounds of a 422's details: a body of a megabyte of unknown fields must
// not answer several megabytes.
const (
	// MaxDetails is how many field problems a 422 lists; the message says
	// how many more there were.
	MaxDetails = 20
	// MaxDetailChars bounds a detail's field path and its problem, in
	// characters; a longer one ends in "…".
	MaxDetailChars = 200
)

// boundDetails returns at most MaxDetails problems, each truncated to
// MaxDetailChars, and the message that goes with them.
func boundDetails(all []apierr.FieldProblem) ([]apierr.FieldProblem, string) {
	shown := make([]apierr.FieldProblem, 0, min(len(all), MaxDetails))
	for _, fp := range all[:min(len(all), MaxDetails)] {
		shown = append(shown, apierr.FieldProblem{Field: truncate(fp.Field), Problem: truncate(fp.Problem)})
	}
	switch {
	case len(all) == 1:
		return shown, shown[0].Field + " " + shown[0].Problem
	case len(all) > MaxDetails:
		return shown, fmt.Sprintf("%d fields are invalid: the first %d are listed, and %d more",
			len(all), MaxDetails, len(all)-MaxDetails)
	}
	return shown, fmt.Sprintf("%d fields are invalid", len(all))
}

// truncate cuts s to MaxDetailChars characters.
func truncate(s string) string {
	if utf8.RuneCountInString(s) <= MaxDetailChars {
		return s
	}
	return string([]rune(s)[:MaxDetailChars-1]) + "…"
}
