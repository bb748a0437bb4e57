package bridge

import (
	"errors"
	"fmt"
)

// Signature errors, returned by [Verify]. A [Serve] handler answers every one
// of them with 401.
var (
	// ErrNotSigned: the timestamp or the signature header is missing.
	ErrNotSigned = errors.New("bridge: request not signed")
	// ErrInvalidHeader: the timestamp header is not whole unix seconds in decimal.
	ErrInvalidHeader = errors.New("bridge: invalid signature timestamp")
	// ErrNoValidSignature: the signature matches none of the accepted secrets
	// (or no secret is configured).
	ErrNoValidSignature = errors.New("bridge: no valid signature")
	// ErrStale: the timestamp is further than the tolerance from the clock, in
	// the past or in the future.
	ErrStale = errors.New("bridge: signature timestamp outside tolerance")
)

// ErrReplayed: a [Serve] handler already accepted a request with this
// signature (the same timestamp and body) inside the tolerance window. It
// answers 409 replayed; the engine retries with a fresh signature, so a
// request of its own that met one is not lost.
var ErrReplayed = errors.New("bridge: replayed request")

// Definition errors, returned by [NewWorkflow] and [Registry.Register].
var (
	// ErrInvalidWorkflowID: the id does not match
	// ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ (see [ValidWorkflowID]).
	ErrInvalidWorkflowID = errors.New("bridge: invalid workflow id")
	// ErrInvalidWorkflow: a nil function, or a payload schema that is not a
	// JSON object.
	ErrInvalidWorkflow = errors.New("bridge: invalid workflow")
	// ErrDuplicateWorkflow: a workflow with the same id is already registered
	// (or appears twice in one call).
	ErrDuplicateWorkflow = errors.New("bridge: duplicate workflow id")
)

// Request errors: what a [Serve] handler refuses, with the status it answers.
var (
	// ErrBodyTooLarge (413 body_too_large): the body exceeds
	// [Options.MaxBodyBytes].
	ErrBodyTooLarge = errors.New("bridge: request body too large")
	// ErrInvalidJSON (400 invalid_json): the body is not one JSON object of
	// the request shape.
	ErrInvalidJSON = errors.New("bridge: malformed JSON")
	// ErrUnknownAction (400 unknown_action): action is missing or is not
	// health, discover or execute.
	ErrUnknownAction = errors.New("bridge: unknown action")
	// ErrInvalidRequest (400 invalid_request): well-formed JSON that breaks
	// the protocol (a payload that is not an object, a step listed twice, a
	// recorded output that does not decode as its step type's result).
	ErrInvalidRequest = errors.New("bridge: invalid request")
	// ErrWorkflowNotFound (404 workflow_not_found): no workflow of that id is
	// registered.
	ErrWorkflowNotFound = errors.New("bridge: workflow not found")
)

// Replay errors. A step function returns them to the workflow function, which
// should return at once; the handler answers from what the step recorded,
// whatever the workflow function then returns.
var (
	// ErrSuspended: this step was executed (run) or described (send, delay,
	// waitForEvent, digest) and the invocation ends here. It is not a failure:
	// the engine records the step and calls again.
	ErrSuspended = errors.New("bridge: workflow suspended at this step")
	// ErrNondeterministic (422 nondeterministic): the function no longer
	// follows the recorded history: a recorded step was called with another
	// type, out of order, not at all, or its recorded output no longer decodes
	// into the type [Run] asks for.
	ErrNondeterministic = errors.New("bridge: nondeterministic workflow")
	// ErrDuplicateStepID (422 duplicate_step_id): one execution called two
	// steps with the same id.
	ErrDuplicateStepID = errors.New("bridge: duplicate step id")
	// ErrInvalidStep (500, carried in a [*StepError]): a step was called with
	// invalid arguments (empty id or channel, nil callback, negative
	// duration…) or inside another step's callback.
	ErrInvalidStep = errors.New("bridge: invalid step")
)

// Client errors, returned by [Client.Discover] and [Client.Health].
// [Client.Execute] reports the same situations as an [Outcome] instead.
var (
	// ErrUnreachable: no answer came back (connection refused, DNS, TLS,
	// timeout).
	ErrUnreachable = errors.New("bridge: unreachable")
	// ErrRejected: the Bridge answered with a status other than 200, or with
	// a body that is not the expected answer. The message names the status.
	ErrRejected = errors.New("bridge: rejected")
)

// ErrInvalidDuration is returned by [ParseDuration] and when a [Duration] on
// the wire is neither a non-negative number of seconds nor a duration string.
var ErrInvalidDuration = errors.New("bridge: invalid duration")

// StepError reports a step that failed: its callback (the function given to
// [Run], the render function given to [Send]) returned an error or panicked,
// its output could not be encoded, or the step was called with invalid
// arguments ([ErrInvalidStep]). The handler answers 500 with the step id and
// the engine retries the step with backoff.
type StepError struct {
	StepID string
	Err    error
}

// Error implements error.
func (e *StepError) Error() string {
	return fmt.Sprintf("bridge: step %q: %v", e.StepID, e.Err)
}

// Unwrap returns the cause, for [errors.Is] and [errors.As].
func (e *StepError) Unwrap() error { return e.Err }
