package httpapi

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
)

// Errors of the HTTP layer itself.
var (
	errInvalidJSON  = errors.New("request body is not valid JSON")
	errBodyTooLarge = errors.New("request body is larger than 1 MiB")
	errNotFound     = errors.New("no such route")
	errMethod       = errors.New("method not allowed on this route")
	errUnauthorized = errors.New("missing or invalid credentials")
	errNotReady     = errors.New("not ready")
	errRateLimited  = errors.New("too many requests for this tenant; retry after the Retry-After header's seconds")
)

// kinds maps each kind of error to its default code, first match wins; the
// status is the code's, from apierr's table of codes. A *apierr.Error or
// *apierr.ValidationError supplies its own code (of the same status: its
// kind is its code's).
var kinds = []struct {
	kind error
	code string
}{
	{errInvalidJSON, apierr.CodeInvalidJSON},
	{errBodyTooLarge, apierr.CodeBodyTooLarge},
	{errNotFound, apierr.CodeNotFound},
	{errMethod, apierr.CodeMethodNotAllowed},
	{errUnauthorized, apierr.CodeUnauthorized},
	{apierr.ErrUnauthenticated, apierr.CodeUnauthorized},
	{errNotReady, apierr.CodeNotReady},
	{errNotLive, apierr.CodeNotLive},
	{errRateLimited, apierr.CodeRateLimited},
	{errTooManyStreams, apierr.CodeTooManyStreams},
	{apierr.ErrBadRequest, apierr.CodeBadRequest},
	{apierr.ErrNotFound, apierr.CodeNotFound},
	{projections.ErrNotFound, apierr.CodeNotFound},
	{apierr.ErrConflict, apierr.CodeConflict},
	{apierr.ErrInvalid, apierr.CodeValidationFailed},
	{projections.ErrBadCursor, apierr.CodeValidationFailed},
	{apierr.ErrBusy, apierr.CodeBusy},
	// The last line behind the edge checks: an id that would make a
	// subject the server refuses is the client's fault, never a 500.
	{eventlog.ErrBadSubject, apierr.CodeInvalidID},
	{apierr.ErrUnavailable, apierr.CodeUpstreamUnavailable},
	// Nothing else matched: an internal deadline passed (the event log
	// did not answer in time, a trigger's writes came later than its
	// arming allows). The request may be repeated (under its
	// transactionId for a trigger), so it is busy, not a 500.
	{context.DeadlineExceeded, apierr.CodeBusy},
}

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
	for _, row := range kinds {
		if !errors.Is(err, row.kind) {
			continue
		}
		d := errorDetail{Code: row.code, Message: err.Error()}
		var ce *apierr.Error
		if errors.As(err, &ce) && ce.Code != "" {
			d.Code = ce.Code
		}
		var ve *apierr.ValidationError
		if errors.As(err, &ve) {
			d.Code = ve.Code
			d.Details, d.Message = boundDetails(ve.Problems)
		}
		if errors.Is(err, eventlog.ErrBadSubject) {
			d.Message = "an id in the request is too long or malformed"
		}
		if row.kind == context.DeadlineExceeded {
			d.Message = "the request did not finish in time; repeat it after the Retry-After header's seconds"
		}
		if errors.Is(err, projections.ErrBadCursor) {
			d.Details = []apierr.FieldProblem{{Field: "cursor", Problem: "is not a cursor this API issued"}}
		}
		return apierr.Status(row.code), d
	}
	return apierr.Status(apierr.CodeInternal), errorDetail{Code: apierr.CodeInternal, Message: "internal error"}
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
