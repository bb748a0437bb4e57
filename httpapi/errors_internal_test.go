package httpapi

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
)

// Each kind of error answers its status, code and message: the layers
// below speak apierr, so the edge reads their errors without naming them.
func TestDescribeAnswersEveryLayersErrors(t *testing.T) {
	malformed := "an id in the request is too long or malformed"
	tests := []struct {
		name    string
		err     error
		status  int
		code    string
		message string
		details []string
	}{
		{"a read of nothing", fmt.Errorf("load: %w", projections.ErrNotFound), 404, "not_found", "load: projections: not found", nil},
		{"a cursor not issued", projections.ErrBadCursor, 422, "validation_failed", "projections: invalid cursor", []string{"cursor"}},
		{"a subject the server would refuse", fmt.Errorf("append ev.t.run.x: %w", eventlog.ErrBadSubject), 422, "invalid_id", malformed, nil},
		{"a subject too long", eventlog.ErrSubjectTooLong, 422, "invalid_id", malformed, nil},
		{"a deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), 503, "busy",
			"the request did not finish in time; repeat it after the Retry-After header's seconds", nil},
		{"a code of its kind", apierr.New(apierr.CodeRunFinished, "run r is finished"), 409, "run_finished", "run r is finished", nil},
		{"a read of a binding not made", apierr.Missing(apierr.CodeBridgeNotConfigured, "none"), 404, "bridge_not_configured", "none", nil},
		{"fields", func() error { var p apierr.Problems; p.Add("a", "is bad"); return p.Err() }(), 422, "validation_failed", "a is bad", []string{"a"}},
		{"invalid JSON", fmt.Errorf("%w: %v", errInvalidJSON, "eof"), 400, "invalid_json", "request body is not valid JSON: eof", nil},
		{"a body too large", errBodyTooLarge, 413, "body_too_large", "request body is larger than 1 MiB", nil},
		{"a method", errMethod, 405, "method_not_allowed", "method not allowed on this route", nil},
		{"a route", errNotFound, 404, "not_found", "no such route", nil},
		{"credentials", errUnauthorized, 401, "unauthorized", "missing or invalid credentials", nil},
		{"a rate", errRateLimited, 429, "rate_limited", errRateLimited.Message, nil},
		{"streams", errTooManyStreams, 429, "too_many_streams", errTooManyStreams.Message, nil},
		{"not ready", errNotReady, 503, "not_ready", "not ready", nil},
		{"not live", errNotLive, 503, "not_live", errNotLive.Message, nil},
		{"a recorded code", apierr.New(apierr.CodeDeliveryFailed, "secret cause"), 500, "internal", "internal error", nil},
		{"anything else", errors.New("secret cause"), 500, "internal", "internal error", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, d := describe(tt.err)
			var fields []string
			for _, p := range d.Details {
				fields = append(fields, p.Field)
			}
			if status != tt.status || d.Code != tt.code || d.Message != tt.message || !slices.Equal(fields, tt.details) {
				t.Fatalf("describe(%v) = %d %+v, want %d %s %q %v", tt.err, status, d, tt.status, tt.code, tt.message, tt.details)
			}
		})
	}
}

// The edge's table of errors is apierr's and the deadline's: errors.go
// imports no other package of ours.
func TestErrorsSpeakOnlyApierr(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path != "github.com/heraldhq/herald/apierr" && !slices.Contains([]string{"context", "errors", "fmt", "unicode/utf8"}, path) {
			t.Errorf("errors.go imports %s", path)
		}
	}
}
