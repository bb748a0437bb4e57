package bridge

import (
	"errors"
	"fmt"
)

// Definition errors, returned by [NewWorkflow] and [Registry.Register].
var (
	// ErrInvalidWorkflowID: the id does not match
	// ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$.
	ErrInvalidWorkflowID = errors.New("bridge: invalid workflow id")
	// ErrInvalidWorkflow: a nil function, or a payload schema that is not a
	// JSON object.
	ErrInvalidWorkflow = errors.New("bridge: invalid workflow")
	// ErrDuplicateWorkflow: a workflow with the same id is already registered
	// (or appears twice in one call).
	ErrDuplicateWorkflow = errors.New("bridge: duplicate workflow id")
)

// Replay errors. A step function returns them to the workflow function, which
// should return at once; the handler answers from what the step recorded,
// whatever the workflow function then returns.
var (
	// ErrSuspended: this step was executed (run) or described (send, delay,
	// waitForEvent, digest) and the invocation ends here. It is not a failure:
	// the service records the step and calls again.
	ErrSuspended = errors.New("bridge: workflow suspended at this step")
	// ErrNondeterministic (422 nondeterministic): the function no longer
	// follows the recorded history: a recorded step was called with another
	// id or type, or not at all, or its recorded output no longer decodes
	// into the type the step asks for. Its message names the step's position
	// (from 1) and both sides, in a stable form:
	//
	//	nondeterministic workflow: step 2 was "send-email" (send) in the history, the code asked for "load-user" (run)
	ErrNondeterministic = errors.New("nondeterministic workflow")
	// ErrDuplicateStepID (422 duplicate_step_id): one execution called two
	// steps with the same id.
	ErrDuplicateStepID = errors.New("bridge: duplicate step id")
	// ErrInvalidStep (500 invalid_step, carried in a [*StepError]): a step
	// was called with invalid arguments (empty id or channel, nil callback,
	// negative duration…) or inside another step's callback. The service
	// fails the run at once: a retry would call the step alike.
	ErrInvalidStep = errors.New("bridge: invalid step")
)

// Request errors: what a [Serve] handler refuses (see the table of [Serve]).
var (
	errBodyTooLarge     = errors.New("bridge: request body too large")
	errInvalidJSON      = errors.New("bridge: malformed JSON")
	errUnknownAction    = errors.New("bridge: unknown action")
	errInvalidRequest   = errors.New("bridge: invalid request")
	errWorkflowNotFound = errors.New("bridge: workflow not found")
	errReplayed         = errors.New("bridge: replayed request")
)

// StepError reports a step that failed: its callback (the function given to
// [Run], the render function given to [Send]) returned an error or panicked,
// its output could not be encoded, or the step was called with invalid
// arguments ([ErrInvalidStep]). The handler answers 500 with the step id and
// the service retries the step with backoff.
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
