package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/bridge/wire"
)

// Context is what a workflow function sees of one execution: the run, its
// recipient, and the replay state that the step functions ([Run], [Send], [Delay], [DelayUntil], [WaitForEvent], [Digest])
// consult. It lives for one request, belongs to the goroutine running the
// workflow function, and is not safe for concurrent use: steps are serial.
//
// Context is deliberately not a context.Context: code outside steps must not
// do I/O. The callback of [Run] receives the request's context.Context.
type Context struct {
	// WorkflowID and RunID identify the run.
	WorkflowID string
	RunID      string
	// Subscriber is the run's single recipient, or nil for a
	// schedule-triggered run: as it was at the run's start, the same on
	// every execution of the run, so the workflow may branch on it. Sends
	// go to the subscriber's current addresses.
	Subscriber *Subscriber
	// Links are the subscriber's unsubscribe and preference page URLs
	// for this workflow, to put in messages; nil when the service has no
	// public URL or the run has no subscriber. Links.Unsubscribe is nil
	// for a critical workflow. A link may differ from one execution to
	// the next (each is a fresh token): use it in content, do not branch
	// on it.
	Links *Links

	ctx context.Context

	history []wire.CompletedStep // completed steps, oldest first
	calls   int                  // steps called so far
	seen    map[string]bool      // step ids called so far
	inStep  bool                 // a step callback is running

	// replayOnly: a step past the history ends the execution with its id
	// and type, without running or describing it (see bridgetest).
	replayOnly bool

	// At most one of next and err is set; once one is, the execution is over.
	next *wire.Step // the step this execution ran or describes
	err  error      // why this execution failed
}

// newContext checks the execute request and prepares the replay of
// workflow w, bound to the request's payload.
func newContext(ctx context.Context, req *wire.ExecuteRequest, w *Workflow) (*Context, func(*Context) error, error) {
	payload := bytes.TrimSpace(req.Payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		payload = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, nil, fmt.Errorf("%w: payload must be a JSON object", errInvalidRequest)
	}
	ids := make(map[string]bool, len(req.Steps))
	for i, s := range req.Steps {
		if s.StepID == "" {
			return nil, nil, fmt.Errorf("%w: steps[%d] has no stepId", errInvalidRequest, i)
		}
		if ids[s.StepID] {
			return nil, nil, fmt.Errorf("%w: steps lists %q twice", errInvalidRequest, s.StepID)
		}
		ids[s.StepID] = true
	}
	fn, err := w.bind(payload)
	if err != nil {
		return nil, nil, err
	}
	return &Context{
		WorkflowID: req.WorkflowID,
		RunID:      req.RunID,
		Subscriber: req.Subscriber,
		Links:      req.Links,
		ctx:        ctx,
		history:    req.Steps,
		seen:       make(map[string]bool),
	}, fn, nil
}

// execute runs fn and turns what happened into the answer: the step it
// reached, its failure, or its completion.
func (c *Context) execute(fn func(*Context) error) (wire.ExecuteAnswer, error) {
	fnErr := c.call(fn)
	switch {
	case c.next != nil:
		return wire.ExecuteAnswer{Status: wire.StatusStep, Step: c.next}, nil
	case c.err != nil:
		return wire.ExecuteAnswer{}, c.err
	case fnErr != nil:
		return wire.ExecuteAnswer{}, &workflowError{fnErr}
	case c.calls < len(c.history):
		rec := c.history[c.calls]
		return wire.ExecuteAnswer{}, fmt.Errorf("%w: step %d was %q (%s) in the history, the code returned without asking for it",
			ErrNondeterministic, c.calls+1, rec.StepID, rec.Type)
	}
	return wire.ExecuteAnswer{Status: wire.StatusCompleted}, nil
}

// check runs fn against the history as a check request asks: no step body
// runs (no Run callback, no content function), and the first step past
// the history is named, not described.
func (c *Context) check(fn func(*Context) error) (wire.CheckAnswer, error) {
	c.replayOnly = true
	answer, err := c.execute(fn)
	if err != nil {
		return wire.CheckAnswer{}, err
	}
	if answer.Step == nil {
		return wire.CheckAnswer{Status: wire.StatusCompleted}, nil
	}
	return wire.CheckAnswer{Status: wire.StatusStep, Step: &wire.StepRef{StepID: answer.Step.StepID, Type: answer.Step.Type}}, nil
}

// call runs the workflow function, turning a panic into an error.
func (c *Context) call(fn func(*Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("workflow panicked: %v", r)
		}
	}()
	return fn(c)
}

// begin accounts for a step call. It returns the recorded step when the call
// replays one, nil when the call is the next step to execute or describe, or
// the error that ends the execution.
func (c *Context) begin(stepID string, typ wire.StepType) (*wire.CompletedStep, error) {
	switch {
	case c.next != nil:
		return nil, ErrSuspended
	case c.err != nil:
		return nil, c.err
	case c.inStep:
		return nil, c.invalid(stepID, "called inside another step's callback")
	case stepID == "":
		return nil, c.invalid("", "empty step id")
	case c.seen[stepID]:
		return nil, c.fail(fmt.Errorf("%w: %q is called twice", ErrDuplicateStepID, stepID))
	}
	c.seen[stepID] = true
	i := c.calls
	c.calls++
	if i >= len(c.history) {
		if c.replayOnly {
			return nil, c.answer(wire.Step{StepID: stepID, Type: typ})
		}
		return nil, nil
	}
	rec := &c.history[i]
	if rec.StepID != stepID || rec.Type != typ {
		return nil, c.fail(fmt.Errorf("%w: step %d was %q (%s) in the history, the code asked for %q (%s)",
			ErrNondeterministic, i+1, rec.StepID, rec.Type, stepID, typ))
	}
	return rec, nil
}

// answer ends the execution with step as its answer.
func (c *Context) answer(step wire.Step) error {
	c.next = &step
	return ErrSuspended
}

// fail ends the execution with err.
func (c *Context) fail(err error) error {
	c.err = err
	return err
}

// invalid ends the execution with an [ErrInvalidStep] failure of stepID.
func (c *Context) invalid(stepID, problem string) error {
	return c.fail(&StepError{StepID: stepID, Err: fmt.Errorf("%w: %s", ErrInvalidStep, problem)})
}

// workflowError is an error the workflow function returned (or a panic of it)
// outside any step: a 500 without a step id, whatever it wraps.
type workflowError struct{ err error }

func (e *workflowError) Error() string { return e.err.Error() }
