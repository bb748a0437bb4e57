package provider

import (
	"errors"
	"io"
	"testing"
)

func TestErrorIsItsKindAndItsCause(t *testing.T) {
	err := Failf(ErrNotSent, io.ErrUnexpectedEOF, "provider answered %d", 503)
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("kind or cause lost: %v", err)
	}
	if errors.Is(err, ErrRejected) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatal("an error of one kind is also another")
	}
	if got := PublicMessage(err); got != "provider answered 503" {
		t.Fatalf("public message %q", got)
	}
	if got := PublicMessage(errors.New("secret text")); got != "the provider failed" {
		t.Fatalf("a foreign error's text was made public: %q", got)
	}
	if got := Failf(ErrRejected, nil, "rejected").Error(); got != "rejected" {
		t.Fatalf("Error() without a cause = %q", got)
	}
}
