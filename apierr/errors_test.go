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
