package apierr

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindsSurviveWrapping(t *testing.T) {
	err := fmt.Errorf("trigger: %w", Errorf(CodeRunFinished, "run %s is finished", "r1"))
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
		t.Fatalf("kind lost or confused: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != "run_finished" || e.Message != "run r1 is finished" {
		t.Fatalf("code or message lost: %+v", e)
	}
}

func TestProblems(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Fatal("no problem recorded, yet an error")
	}
	p.Add("to.subscriberId", "must be 1 to %d printable characters", 256)
	err := p.Err()
	var ve *ValidationError
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) || ve.Code != "validation_failed" {
		t.Fatalf("Err() = %#v", err)
	}
	if err.Error() != "to.subscriberId must be 1 to 256 printable characters" {
		t.Fatalf("one problem's message = %q", err.Error())
	}
	p.Add("payload", "is required")
	if p.Err().Error() != "2 fields are invalid" {
		t.Fatalf("two problems' message = %q", p.Err().Error())
	}
}

// A masked error keeps its text for the log and its kind through wraps;
// its public text is the client's.
func TestMasked(t *testing.T) {
	m := Masked(CodeInvalidID, "eventlog: bad subject", "an id is malformed")
	err := fmt.Errorf("append ev.x: %w", m)
	var e *Error
	if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) || e.Code != CodeInvalidID || e.Public != "an id is malformed" {
		t.Fatalf("kind, code or public text lost: %+v", e)
	}
	if err.Error() != "append ev.x: eventlog: bad subject" {
		t.Fatalf("text = %q", err.Error())
	}
}

// A validation error with a message of its own reads as it.
func TestValidationErrorMessage(t *testing.T) {
	ve := &ValidationError{Code: CodeValidationFailed, Message: "invalid cursor",
		Problems: []FieldProblem{{Field: "cursor", Problem: "is not a cursor"}}}
	if ve.Error() != "invalid cursor" || !errors.Is(ve, ErrInvalid) {
		t.Fatalf("Error() = %q", ve.Error())
	}
}
