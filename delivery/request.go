package delivery

import (
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
)

// maxKeyBytes bounds the idempotency key and the other ids of a request,
// in bytes: the key is encoded into an event subject token.
const maxKeyBytes = 1024

// Request is one send to deliver: what the engine hands over for a send
// step, and the body of POST /v1/deliver (the JSON names are the wire's).
type Request struct {
	// IdempotencyKey makes the delivery happen at most once: the engine
	// derives it per step as "<runId>:<stepId>". Required, 1–1024 bytes.
	IdempotencyKey string `json:"idempotencyKey"`
	// RunID and StepID name the step; they are recorded with each attempt
	// (GET /v1/deliveries?runId=). Required.
	RunID  string `json:"runId"`
	StepID string `json:"stepId"`
	// SubscriberID is the run's subscriber (external id). Required.
	SubscriberID string `json:"subscriberId"`
	// To, when set, is the recipient subscriber instead of SubscriberID (a
	// send step's "to" override), of the same tenant.
	To string `json:"to,omitempty"`
	// Channel is the channel kind to send on ("email"). Required.
	Channel string `json:"channel"`
	// Content is the message. Required.
	Content *Content `json:"content"`
}

// Content is what a send delivers.
type Content struct {
	// Subject is the message's subject, for channels that have one.
	Subject string `json:"subject,omitempty"`
	// Body is the message's text.
	Body string `json:"body"`
}

// Recipient is the subscriber whose address the message goes to.
func (r Request) Recipient() string {
	if r.To != "" {
		return r.To
	}
	return r.SubscriberID
}

// Validate reports every problem of r at once, with the request's JSON
// names ("idempotencyKey", "content.subject"): an error wrapping both
// ErrInvalidRequest and a *apierr.ValidationError, nil when there is none.
func (r Request) Validate() error {
	var p apierr.Problems
	id := func(field, v string, required bool) {
		switch {
		case v == "" && !required:
		case v == "":
			p.Add(field, "is required")
		case len(v) > maxKeyBytes:
			p.Add(field, "must be at most %d bytes", maxKeyBytes)
		case !apierr.ValidID(v, maxKeyBytes):
			p.Add(field, "must be printable text")
		}
	}
	id("idempotencyKey", r.IdempotencyKey, true)
	id("runId", r.RunID, true)
	id("stepId", r.StepID, true)
	id("subscriberId", r.SubscriberID, true)
	id("to", r.To, false)
	id("channel", r.Channel, true)
	if r.Content == nil {
		p.Add("content", "is required")
	} else {
		if !utf8.ValidString(r.Content.Subject) {
			p.Add("content.subject", "must be valid UTF-8")
		}
		if !utf8.ValidString(r.Content.Body) {
			p.Add("content.body", "must be valid UTF-8")
		}
	}
	if len(p) == 0 {
		return nil
	}
	return &invalidRequest{ve: &apierr.ValidationError{Code: CodeInvalidRequest, Problems: p}}
}

// invalidRequest is the error of Validate: its text names every problem.
type invalidRequest struct {
	ve *apierr.ValidationError
}

func (e *invalidRequest) Error() string {
	parts := make([]string, len(e.ve.Problems))
	for i, p := range e.ve.Problems {
		parts[i] = p.Field + " " + p.Problem
	}
	return "delivery: invalid request: " + strings.Join(parts, "; ")
}

func (e *invalidRequest) Unwrap() []error { return []error{ErrInvalidRequest, e.ve} }

// StatusSent is the Status of a Result whose message the provider took.
const StatusSent = "sent"

// Result is the outcome of a delivered send: the body of POST
// /v1/deliver's 200.
type Result struct {
	// AttemptID is the attempt that sent the message.
	AttemptID string `json:"attemptId"`
	// Status is StatusSent.
	Status string `json:"status"`
	// ProviderMessageID is the provider's id of the message (for SMTP the
	// Message-ID without angle brackets).
	ProviderMessageID string `json:"providerMessageId"`
}
