package delivery

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
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
	// Channel is the channel kind to send on ("email", "sms", "chat",
	// "push", "in_app", "webhook"). Required.
	Channel string `json:"channel"`
	// Content is the send step's content as the Bridge gave it: a JSON
	// object of the kind's content type in bridge/wire (wire.EmailContent
	// for "email", ...), at most MaxContentBytes. Required. Deliver checks
	// it against the kind (ErrInvalidContent) before anything is recorded.
	Content json.RawMessage `json:"content"`
	// WorkflowID names the run's workflow, for providers that carry it
	// (the webhook body). Optional.
	WorkflowID string `json:"workflowId,omitempty"`
	// Seen, when not zero, is the last event sequence the caller has read
	// (the engine: its run's last event when the turn began), for a
	// caller in the process that reads its outcome from its own later
	// events rather than from GET /v1/deliveries. Deliver then reads
	// channels, preferences and the recipient from projections that have
	// applied at least the tenant's events up to Seen that a decision reads
	// (projections.Store.WaitForTenant), and answers without waiting for its ledger
	// rows to be applied (the projector applies them before any event
	// the caller appends afterwards). Zero (POST /v1/deliver): the reads
	// see every write acknowledged before the call, and the answer's row
	// is in GET /v1/deliveries when Deliver returns. Never sent on the
	// wire.
	Seen uint64 `json:"-"`
	// Decision, when set, is the decision its caller made for this send
	// with Decide, on the projections Deliver reads (the engine's, before
	// it holds or sends): Deliver sends by it rather than read them again.
	// One made for another send is not used. Never sent on the wire: the
	// service a Client reaches decides itself.
	Decision *Decision `json:"-"`
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
	// A webhook goes to the channel's URL: a run with no subscriber (a
	// cron tick) may send one.
	id("subscriberId", r.SubscriberID, r.Channel != KindWebhook)
	id("to", r.To, false)
	id("channel", r.Channel, true)
	id("workflowId", r.WorkflowID, false)
	switch c := bytes.TrimSpace(r.Content); {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
		p.Add("content", "is required")
	case c[0] != '{' || !json.Valid(c):
		p.Add("content", "must be an object")
	case !utf8.Valid(c):
		p.Add("content", "must be valid UTF-8")
	}
	if len(p) == 0 {
		return nil
	}
	return &invalidRequest{ve: &apierr.ValidationError{Code: apierr.CodeValidationFailed, Problems: p}}
}

// invalidRequest is the error of Validate: its text names every problem.
type invalidRequest struct {
	ve   *apierr.ValidationError
	kind error // ErrInvalidContent, or nil for ErrInvalidRequest
}

func (e *invalidRequest) Error() string {
	parts := make([]string, len(e.ve.Problems))
	for i, p := range e.ve.Problems {
		parts[i] = p.Field + " " + p.Problem
	}
	what := "request"
	if e.kind == ErrInvalidContent {
		what = "content"
	}
	return "delivery: invalid " + what + ": " + strings.Join(parts, "; ")
}

func (e *invalidRequest) Unwrap() []error {
	if e.kind == nil {
		return []error{ErrInvalidRequest, e.ve}
	}
	return []error{e.kind, e.ve}
}

// Statuses of a Result.
const (
	// StatusSent: a provider took the message.
	StatusSent = "sent"
	// StatusSkipped: nothing was sent, on purpose: Reason says why. The
	// send step completes with the result and the run goes on.
	StatusSkipped = "skipped"
)

// Reasons of a skipped send.
const (
	// ReasonNoAddress: the recipient is unknown, or has no address of the
	// kind (contacts[kind] empty, or its first address unusable).
	ReasonNoAddress = string(wire.SkipNoAddress)
	// ReasonSuppressed: the recipient's address of the kind is suppressed
	// (GET /v1/suppressions): put there by the tenant, or by a provider's
	// answer that it does not exist.
	ReasonSuppressed = string(wire.SkipSuppressed)
)

// Result is the outcome of a delivered send: the body of POST
// /v1/deliver's 200, and the send step's output. A sent result is
// {"attemptId","status":"sent","providerMessageId"}; a skipped one
// {"attemptId","status":"skipped","reason"}.
type Result struct {
	// AttemptID is the attempt that sent the message, or the ledger row
	// of the skip.
	AttemptID string `json:"attemptId"`
	// Status is StatusSent or StatusSkipped.
	Status string `json:"status"`
	// ProviderMessageID is the provider's id of a sent message (for SMTP
	// the Message-ID without angle brackets); empty when skipped.
	ProviderMessageID string `json:"providerMessageId,omitempty"`
	// Reason says why a send was skipped (ReasonNoAddress,
	// ReasonSuppressed); empty when
	// sent.
	Reason string `json:"reason,omitempty"`
}
