package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// WorkflowFunc is the body of a workflow. It runs from the top on every call
// the engine makes for the run, so it must be deterministic (see the package
// documentation): only steps may do I/O or look at the clock. It must return
// as soon as a step returns an error; returning nil means the workflow is
// completed.
type WorkflowFunc func(ctx *Context) error

// Workflow is a validated workflow definition, built by [NewWorkflow] and
// registered in a [Registry]. It is immutable and safe for concurrent use.
type Workflow struct {
	id            string
	fn            WorkflowFunc
	schedule      string
	payloadSchema json.RawMessage
}

// WorkflowOption configures a [Workflow] in [NewWorkflow].
type WorkflowOption func(*Workflow)

// WithSchedule makes the workflow schedule-triggered: the service starts a
// run (with no subscriber) on each tick of cron, a 5-field expression, a
// 6-field one with seconds first, or a tag such as "@daily". The service
// validates the expression when it syncs. An empty cron leaves the workflow
// event-triggered, which is the default.
func WithSchedule(cron string) WorkflowOption {
	return func(w *Workflow) { w.schedule = cron }
}

// WithPayloadSchema attaches a JSON Schema for the trigger payload, reported by
// discover. It is reserved: the service does not enforce it yet. schema must
// be a JSON object; [NewWorkflow] checks it.
func WithPayloadSchema(schema json.RawMessage) WorkflowOption {
	return func(w *Workflow) { w.payloadSchema = schema }
}

var workflowIDPattern = regexp.MustCompile(`^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$`)

// ValidWorkflowID reports whether id is a valid workflow id: it matches
// ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ (letters, digits and underscores, not
// starting with a digit, and not a lone "_").
func ValidWorkflowID(id string) bool { return workflowIDPattern.MatchString(id) }

// NewWorkflow validates and returns a workflow definition. It returns an error
// wrapping [ErrInvalidWorkflowID] when id is not valid (see [ValidWorkflowID]),
// or [ErrInvalidWorkflow] when fn is nil or the payload schema is not a JSON
// object.
func NewWorkflow(id string, fn WorkflowFunc, opts ...WorkflowOption) (*Workflow, error) {
	if !ValidWorkflowID(id) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidWorkflowID, id)
	}
	w := &Workflow{id: id, fn: fn}
	for _, opt := range opts {
		opt(w)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: %q has a nil function", ErrInvalidWorkflow, id)
	}
	if w.payloadSchema != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(w.payloadSchema, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%w: payload schema of %q is not a JSON object", ErrInvalidWorkflow, id)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, w.payloadSchema) // valid: it just unmarshalled
		w.payloadSchema = compact.Bytes()
	}
	return w, nil
}

// MustWorkflow is like [NewWorkflow] but panics on error. It is meant for
// definitions fixed in the source, where an invalid id is a programming error.
func MustWorkflow(id string, fn WorkflowFunc, opts ...WorkflowOption) *Workflow {
	w, err := NewWorkflow(id, fn, opts...)
	if err != nil {
		panic(err)
	}
	return w
}

// ID returns the workflow id, the workflowId that triggers name.
func (w *Workflow) ID() string { return w.id }

// info describes the workflow for discover.
func (w *Workflow) info() WorkflowInfo {
	wi := WorkflowInfo{WorkflowID: w.id, PayloadSchema: w.payloadSchema}
	if w.schedule != "" {
		s := w.schedule
		wi.Schedule = &s
	}
	return wi
}
