package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Context is what a [WorkflowFunc] sees of one execution: the run, its
// trigger payload, its recipient, and the replay state that the step
// functions ([Run], [Send], [Delay], [DelayUntil], [WaitForEvent], [Digest])
// consult. It lives for one request, belongs to the goroutine running the
// workflow function, and is not safe for concurrent use: steps are serial.
//
// Context is deliberately not a context.Context: code outside steps must not
// do I/O. The callback of [Run] receives the request's context.Context.
type Context struct {
	// WorkflowID and RunID identify the run.
	WorkflowID string
	RunID      string
	// Payload is the trigger payload as forwarded by the service, never nil
	// (empty when the trigger had none). Numbers are float64; use
	// [Context.DecodePayload] to read it into a struct instead.
	Payload map[string]any
	// Subscriber is the run's single recipient, or nil for a
	// schedule-triggered run.
	Subscriber *Subscriber

	ctx     context.Context
	payload json.RawMessage

	history []CompletedStep // completed steps, oldest first
	calls   int             // steps called so far
	seen    map[string]bool // step ids called so far
	inStep  bool            // a step callback is running

	// At most one of next and err is set; once one is, the execution is over.
	next *Step // the step this execution ran or describes
	err  error // why this execution failed
}

// newContext checks the execute request and prepares its replay.
func newContext(ctx context.Context, req *ExecuteRequest) (*Context, error) {
	payload := bytes.TrimSpace(req.Payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		payload = json.RawMessage("{}")
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("%w: payload must be a JSON object", ErrInvalidRequest)
	}
	ids := make(map[string]bool, len(req.Steps))
	for i, s := range req.Steps {
		if s.StepID == "" {
			return nil, fmt.Errorf("%w: steps[%d] has no stepId", ErrInvalidRequest, i)
		}
		if ids[s.StepID] {
			return nil, fmt.Errorf("%w: steps lists %q twice", ErrInvalidRequest, s.StepID)
		}
		ids[s.StepID] = true
	}
	return &Context{
		WorkflowID: req.WorkflowID,
		RunID:      req.RunID,
		Payload:    m,
		Subscriber: req.Subscriber,
		ctx:        ctx,
		payload:    payload,
		history:    req.Steps,
		seen:       make(map[string]bool),
	}, nil
}

// DecodePayload decodes the trigger payload into v, as json.Unmarshal does.
func (c *Context) DecodePayload(v any) error {
	return json.Unmarshal(c.payload, v)
}

// execute runs fn and turns what happened into the answer: the step it
// reached, its failure, or its completion.
func (c *Context) execute(fn WorkflowFunc) (ExecuteAnswer, error) {
	fnErr := c.call(fn)
	switch {
	case c.next != nil:
		return ExecuteAnswer{Status: StatusStep, Step: c.next}, nil
	case c.err != nil:
		return ExecuteAnswer{}, c.err
	case fnErr != nil:
		return ExecuteAnswer{}, &workflowError{fnErr}
	case c.calls < len(c.history):
		return ExecuteAnswer{}, fmt.Errorf("%w: the workflow returned without calling recorded step %q (history position %d)",
			ErrNondeterministic, c.history[c.calls].StepID, c.calls)
	}
	return ExecuteAnswer{Status: StatusCompleted}, nil
}

// call runs the workflow function, turning a panic into an error.
func (c *Context) call(fn WorkflowFunc) (err error) {
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
func (c *Context) begin(stepID string, typ StepType) (*CompletedStep, error) {
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
		return nil, nil
	}
	rec := &c.history[i]
	if rec.StepID != stepID {
		return nil, c.fail(fmt.Errorf("%w: step %q is called where the history has step %q (position %d)",
			ErrNondeterministic, stepID, rec.StepID, i))
	}
	if rec.Type != typ {
		return nil, c.fail(fmt.Errorf("%w: step %q is called as %s but was recorded as %s",
			ErrNondeterministic, stepID, typ, rec.Type))
	}
	return rec, nil
}

// answer ends the execution with step as its answer.
func (c *Context) answer(step Step) error {
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
