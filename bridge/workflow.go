package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/bridge/internal/replayhook"
	"github.com/heraldhq/herald/bridge/wire"
)

// Workflow is a validated workflow definition, built by [NewWorkflow] and
// registered in a [Registry]. It is immutable and safe for concurrent use.
type Workflow struct {
	replayHook // bridgetest's road to replay (see replayhook.go)

	id string
	// bind decodes a run's payload and returns the workflow function bound
	// to it, or an errInvalidRequest when the payload does not decode.
	bind          func(payload json.RawMessage) (func(*Context) error, error)
	schedule      string
	payloadSchema json.RawMessage
	critical      bool
	defaults      map[Channel]bool
	name          string
	description   string
	// controls are the steps' control schemas (step id → JSON Schema),
	// and controlDefaults each schema's property defaults as an object.
	controls        map[string]json.RawMessage
	controlDefaults map[string]map[string]json.RawMessage
	controlErr      error
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

// WithPayloadSchema attaches a JSON Schema (draft 2019-09) for the trigger
// payload, reported by discover. After a sync the service checks every
// trigger of the workflow against it: a payload it refuses is answered 422
// invalid_payload and starts nothing. schema must be a JSON object;
// [NewWorkflow] checks it. The service refuses the sync (422
// invalid_payload_schema) for a schema over 64 KiB, one using $id,
// $anchor, $recursiveRef or $recursiveAnchor, a $ref that is not a pointer
// into the schema itself ("#/$defs/item"), or a cycle of $refs; see the
// Bridge protocol's "Payload schema".
func WithPayloadSchema(schema json.RawMessage) WorkflowOption {
	return func(w *Workflow) { w.payloadSchema = schema }
}

// WithCritical marks the workflow critical: its sends go out whatever the
// subscriber's preferences say (a password reset, a security alert), and
// its messages carry no unsubscribe link. The default is not critical.
func WithCritical() WorkflowOption {
	return func(w *Workflow) { w.critical = true }
}

// WithDefaultChannels sets the workflow's default preferences: for each
// kind in channels, whether a subscriber who set no preference for the
// kind (neither for this workflow nor for every workflow) receives the
// workflow's sends of it. A kind not in channels sends by default. The
// service refuses at sync a kind it does not know. Repeated, the last
// call wins.
func WithDefaultChannels(channels map[Channel]bool) WorkflowOption {
	return func(w *Workflow) {
		w.defaults = make(map[Channel]bool, len(channels))
		for k, v := range channels {
			w.defaults[k] = v
		}
	}
}

// WithName gives the workflow a display name, shown to subscribers on the
// preference page and to the tenant in GET /v1/workflows instead of its
// id ("Weekly digest" for weekly_digest). At most [MaxWorkflowName]
// characters of text without control characters; [NewWorkflow] checks it.
// The default is none: the id shows.
func WithName(name string) WorkflowOption {
	return func(w *Workflow) { w.name = name }
}

// WithDescription gives the workflow a sentence saying what it sends,
// shown under its name on the preference page and in GET /v1/workflows.
// At most [MaxWorkflowDescription] characters, one line; [NewWorkflow]
// checks it.
// The default is none.
func WithDescription(description string) WorkflowOption {
	return func(w *Workflow) { w.description = description }
}

// Controls declares the controls of the step stepID: values that the
// tenant's teammates edit through the service, per locale, without a
// deploy (a subject, a greeting). schema is a JSON Schema of "type":
// "object" whose every property has a "default"; the step's code reads
// the values the run resolved with [Context.Controls]. The service
// refuses a sync (422 invalid_payload_schema) whose control schemas are
// over 64 KiB for the workflow, or that it cannot enforce as it cannot a
// payload schema. Repeated for one step, the last call wins.
// [NewWorkflow] checks that stepID is not empty and that schema is a
// JSON object of type object whose properties all have a default.
func Controls(stepID string, schema json.RawMessage) WorkflowOption {
	return func(w *Workflow) {
		if w.controls == nil {
			w.controls = map[string]json.RawMessage{}
			w.controlDefaults = map[string]map[string]json.RawMessage{}
		}
		defaults, compact, err := controlSchema(schema)
		if stepID == "" {
			err = errors.New("empty step id")
		}
		if err != nil {
			if w.controlErr == nil {
				w.controlErr = fmt.Errorf("%w: the controls of step %q of %q: %v", ErrInvalidWorkflow, stepID, w.id, err)
			}
			return
		}
		w.controls[stepID] = compact
		w.controlDefaults[stepID] = defaults
	}
}

// controlSchema checks a step's control schema and returns its defaults
// and its compact form.
func controlSchema(schema json.RawMessage) (map[string]json.RawMessage, json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
		return nil, nil, errors.New("the schema is not a JSON object")
	}
	if string(obj["type"]) != `"object"` {
		return nil, nil, errors.New(`the schema is not of "type": "object"`)
	}
	var props map[string]json.RawMessage
	if raw, ok := obj["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, nil, errors.New("the schema's properties are not an object")
		}
	}
	defaults := make(map[string]json.RawMessage, len(props))
	for name, p := range props {
		var prop map[string]json.RawMessage
		if err := json.Unmarshal(p, &prop); err != nil || prop == nil {
			return nil, nil, fmt.Errorf("property %q is not a schema object", name)
		}
		d, ok := prop["default"]
		if !ok {
			return nil, nil, fmt.Errorf("property %q has no default", name)
		}
		defaults[name] = d
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, schema) // valid: it just unmarshalled
	return defaults, compact.Bytes(), nil
}

// Bounds of a workflow's display text, in characters; the service refuses
// a sync whose Bridge declares longer ones.
const (
	MaxWorkflowName        = 100
	MaxWorkflowDescription = 500
)

// NewWorkflow validates and returns a workflow definition. fn is the body
// of the workflow; it runs from the top on every call the service makes for
// the run, so it must be deterministic (see the package documentation):
// only steps may do I/O or look at the clock. It must return as soon as a
// step returns an error; returning nil means the workflow is completed.
//
// fn receives the trigger payload decoded into P with encoding/json, on
// every execution. A payload that does not decode into P (a string where P
// has a number, say) answers 400 and fails the run without calling fn. Use
// a struct for a known shape, map[string]any for an open one (numbers come
// back as float64), json.RawMessage to decode it yourself, or struct{} when
// the workflow reads no payload.
//
// NewWorkflow returns an error wrapping [ErrInvalidWorkflowID] when id does
// not match ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ (letters, digits and
// underscores, not starting with a digit, and not a lone "_"), or
// [ErrInvalidWorkflow] when fn is nil or the payload schema is not a JSON
// object.
func NewWorkflow[P any](id string, fn func(ctx *Context, payload P) error, opts ...WorkflowOption) (*Workflow, error) {
	if !wire.ValidWorkflowID(id) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidWorkflowID, id)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: %q has a nil function", ErrInvalidWorkflow, id)
	}
	w := &Workflow{id: id, bind: func(raw json.RawMessage) (func(*Context) error, error) {
		var p P
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%w: the payload does not decode as %T: %v", errInvalidRequest, p, err)
		}
		return func(c *Context) error { return fn(c, p) }, nil
	}}
	w.replayHook = replayhook.New(w.replay)
	for _, opt := range opts {
		opt(w)
	}
	if w.controlErr != nil {
		return nil, w.controlErr
	}
	for _, t := range []struct {
		what, v string
		max     int
	}{{"name", w.name, MaxWorkflowName}, {"description", w.description, MaxWorkflowDescription}} {
		if !utf8.ValidString(t.v) || utf8.RuneCountInString(t.v) > t.max || strings.ContainsFunc(t.v, unicode.IsControl) {
			return nil, fmt.Errorf("%w: the %s of %q is not text of at most %d characters without control characters",
				ErrInvalidWorkflow, t.what, id, t.max)
		}
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
func MustWorkflow[P any](id string, fn func(ctx *Context, payload P) error, opts ...WorkflowOption) *Workflow {
	w, err := NewWorkflow(id, fn, opts...)
	if err != nil {
		panic(err)
	}
	return w
}

// ID returns the workflow id, the workflowId that triggers name.
func (w *Workflow) ID() string { return w.id }

// info describes the workflow for discover.
func (w *Workflow) info() wire.WorkflowInfo {
	wi := wire.WorkflowInfo{WorkflowID: w.id, PayloadSchema: w.payloadSchema, Critical: w.critical}
	wi.Name, wi.Description = w.name, w.description
	if len(w.controls) > 0 {
		wi.Controls = w.controls
	}
	if len(w.defaults) > 0 {
		wi.Preferences = &wire.WorkflowPreferences{Channels: make(map[string]bool, len(w.defaults))}
		for k, v := range w.defaults {
			wi.Preferences.Channels[string(k)] = v
		}
	}
	if w.schedule != "" {
		s := w.schedule
		wi.Schedule = &s
	}
	return wi
}
