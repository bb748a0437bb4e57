package delivery

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxKeyBytes bounds the idempotency key and the other ids of a request;
// the key is encoded into an event subject token.
const maxKeyBytes = 1024

// Request is one send step to deliver (the body of POST /v1/deliver).
type Request struct {
	// IdempotencyKey makes the delivery happen at most once: the engine
	// derives it per step as "<runId>:<stepId>". Required, 1–1024 bytes.
	IdempotencyKey string
	// RunID and StepID name the step; they are recorded with each attempt
	// (GET /v1/deliveries?runId=). Required.
	RunID, StepID string
	// SubscriberID is the run's subscriber (external id). Required.
	SubscriberID string
	// To, when set, is the recipient subscriber instead of SubscriberID (a
	// send step's "to" override), of the same tenant.
	To string
	// Channel is the channel kind to send on ("email"). Required.
	Channel string
	// Subject and Body are the message content.
	Subject, Body string
}

// Recipient is the subscriber whose address the message goes to.
func (r Request) Recipient() string {
	if r.To != "" {
		return r.To
	}
	return r.SubscriberID
}

// FieldProblem (see schema.go) names a request field at fault too, with
// the request's JSON names ("idempotencyKey", "content.subject").

// RequestError reports every problem of a Request at once. It wraps
// ErrInvalidRequest.
type RequestError struct {
	Problems []FieldProblem
}

func (e *RequestError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + " " + p.Problem
	}
	return "invalid delivery request: " + strings.Join(parts, "; ")
}

func (e *RequestError) Unwrap() error { return ErrInvalidRequest }

// Validate reports every problem of r as a *RequestError, nil when there
// is none.
func (r Request) Validate() error {
	var probs []FieldProblem
	id := func(field, v string, required bool) {
		switch {
		case v == "" && required:
			probs = append(probs, FieldProblem{Field: field, Problem: "is required"})
		case len(v) > maxKeyBytes:
			probs = append(probs, FieldProblem{Field: field, Problem: fmt.Sprintf("must be at most %d bytes", maxKeyBytes)})
		case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
			probs = append(probs, FieldProblem{Field: field, Problem: "must be printable text"})
		}
	}
	id("idempotencyKey", r.IdempotencyKey, true)
	id("runId", r.RunID, true)
	id("stepId", r.StepID, true)
	id("subscriberId", r.SubscriberID, true)
	id("to", r.To, false)
	id("channel", r.Channel, true)
	for _, f := range []struct{ name, v string }{{"content.subject", r.Subject}, {"content.body", r.Body}} {
		if !utf8.ValidString(f.v) {
			probs = append(probs, FieldProblem{Field: f.name, Problem: "must be valid UTF-8"})
		}
	}
	if len(probs) > 0 {
		return &RequestError{Problems: probs}
	}
	return nil
}

// Result is the SendResult of a delivered message.
type Result struct {
	// AttemptID is the attempt that sent the message.
	AttemptID string `json:"attemptId"`
	// Status is always "sent".
	Status string `json:"status"`
	// ProviderMessageID is the provider's id of the message (for SMTP the
	// Message-ID without angle brackets).
	ProviderMessageID string `json:"providerMessageId"`
}
