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
	// Locale is the locale the run's controls were resolved for ("fr-CA");
	// empty when the service named none.
	Locale string

	ctx context.Context

	// controls are the values of each declared step's controls: the
	// schema's defaults overlaid with the values the request carries.
	controls map[string]map[string]json.RawMessage

	history []wire.CompletedStep // completed steps, oldest first
	calls   int                  // steps called so far
	seen    map[string]bool      // step ids called so far
	inStep  bool                 // a step callback is running

	// replayOnly: a step past the history ends the execution with its id
	// and type, without running or describing it (see bridgetest).
	replayOnly bool
	// previewStep, in a preview, is the step previewed: a step past the
	// history before it runs no body and returns a stand-in output (a
	// run step its declared sample); needs is the run step that had
	// none, which ends the preview.
	previewStep string
	needs       string

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
	controls, err := resolveControls(w, req.Controls)
	if err != nil {
		return nil, nil, err
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
		Locale:     req.Locale,
		controls:   controls,
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
	case c.needs != "":
		return wire.ExecuteAnswer{Status: wire.StatusPreviewNeeds, StepID: c.needs}, nil
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
	return c.beginWith(stepID, typ, nil)
}

// beginWith is begin for a step whose preview sample is sample (a run
// step's; nil: none).
func (c *Context) beginWith(stepID string, typ wire.StepType, sample json.RawMessage) (*wire.CompletedStep, error) {
	switch {
	case c.next != nil || c.needs != "":
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
		if c.previewStep != "" {
			return c.previewed(stepID, typ, sample)
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

// previewed is a preview's step past the history: the previewed step
// runs (nil) unless it is a run step, which has no content; a step before
// it returns a stand-in output without running its body.
func (c *Context) previewed(stepID string, typ wire.StepType, sample json.RawMessage) (*wire.CompletedStep, error) {
	if stepID == c.previewStep {
		if typ == wire.StepRun {
			return nil, c.fail(fmt.Errorf("%w: step %q is a run step: it has no content to preview", errInvalidRequest, stepID))
		}
		return nil, nil
	}
	var out json.RawMessage
	switch typ {
	case wire.StepRun:
		if sample == nil {
			c.needs = stepID
			return nil, ErrSuspended
		}
		out = sample
	case wire.StepSend:
		out = json.RawMessage(`{"attemptId":"preview","status":"sent"}`)
	case wire.StepDigest:
		out = json.RawMessage(`{"count":1,"events":[]}`)
	case wire.StepThrottle:
		out = json.RawMessage(`{"throttled":false,"count":1}`)
	default: // a delay, a wait that timed out
		out = json.RawMessage("null")
	}
	return &wire.CompletedStep{StepID: stepID, Type: typ, Output: out}, nil
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

// resolveControls overlays the values of the request on the defaults of
// each step w declares controls for. A step's values must be a JSON
// object; values of steps w declares none for are ignored.
func resolveControls(w *Workflow, sent map[string]json.RawMessage) (map[string]map[string]json.RawMessage, error) {
	out := make(map[string]map[string]json.RawMessage, len(w.controlDefaults))
	for step, defaults := range w.controlDefaults {
		v := make(map[string]json.RawMessage, len(defaults))
		for k, d := range defaults {
			v[k] = d
		}
		if raw, ok := sent[step]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			var values map[string]json.RawMessage
			if err := json.Unmarshal(raw, &values); err != nil || values == nil {
				return nil, fmt.Errorf("%w: the controls of step %q are not a JSON object", errInvalidRequest, step)
			}
			for k, x := range values {
				v[k] = x
			}
		}
		out[step] = v
	}
	return out, nil
}

// Controls decodes the values of step stepID's controls into v (a
// pointer, as for json.Unmarshal): the values the service resolved for
// the run's locale when the run started, the same on every execution of
// the run, with the schema's default for any the service did not send.
// It is an error for a step the workflow declares no controls for
// ([Controls]) or values that do not decode into v.
func (c *Context) Controls(stepID string, v any) error {
	values, ok := c.controls[stepID]
	if !ok {
		return fmt.Errorf("bridge: step %q of %q declares no controls", stepID, c.WorkflowID)
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("bridge: the controls of step %q: %w", stepID, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("bridge: the controls of step %q do not decode as %T: %w", stepID, v, err)
	}
	return nil
}
