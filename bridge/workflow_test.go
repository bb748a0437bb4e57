package bridge_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
)

func noop(*bridge.Context, any) error { return nil }

func TestValidWorkflowID(t *testing.T) {
	for id, want := range map[string]bool{
		"welcome":      true,
		"daily_digest": true,
		"W2":           true,
		"_a":           true,
		"_9lives":      true,
		"a_":           true,
		"_":            false,
		"__a":          false,
		"9lives":       false,
		"":             false,
		"a-b":          false,
		"a.b":          false,
		"a b":          false,
		"é":            false,
		"welcome\n":    false,
	} {
		if got := wire.ValidWorkflowID(id); got != want {
			t.Errorf("ValidWorkflowID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestNewWorkflow(t *testing.T) {
	tests := []struct {
		name string
		id   string
		fn   func(*bridge.Context, any) error
		opts []bridge.WorkflowOption
		want error
	}{
		{"valid", "welcome", noop, nil, nil},
		{"schedule", "daily", noop, []bridge.WorkflowOption{bridge.WithSchedule("0 9 * * *")}, nil},
		{"schema", "typed", noop, []bridge.WorkflowOption{bridge.WithPayloadSchema(json.RawMessage(`{"type": "object"}`))}, nil},
		{"invalid id", "welcome-email", noop, nil, bridge.ErrInvalidWorkflowID},
		{"nil function", "welcome", nil, nil, bridge.ErrInvalidWorkflow},
		{"schema not an object", "typed", noop, []bridge.WorkflowOption{bridge.WithPayloadSchema(json.RawMessage(`[]`))}, bridge.ErrInvalidWorkflow},
		{"schema not JSON", "typed", noop, []bridge.WorkflowOption{bridge.WithPayloadSchema(json.RawMessage(`{`))}, bridge.ErrInvalidWorkflow},
		{"schema null", "typed", noop, []bridge.WorkflowOption{bridge.WithPayloadSchema(json.RawMessage(`null`))}, bridge.ErrInvalidWorkflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := bridge.NewWorkflow(tt.id, tt.fn, tt.opts...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("NewWorkflow error = %v, want %v", err, tt.want)
			}
			if err == nil && w.ID() != tt.id {
				t.Fatalf("ID() = %q, want %q", w.ID(), tt.id)
			}
		})
	}
}

func TestMustWorkflowPanics(t *testing.T) {
	defer func() {
		if err, _ := recover().(error); !errors.Is(err, bridge.ErrInvalidWorkflowID) {
			t.Fatalf("recovered %v, want ErrInvalidWorkflowID", err)
		}
	}()
	bridge.MustWorkflow("not-valid", noop)
}

func TestRegister(t *testing.T) {
	a := bridge.MustWorkflow("a", noop)
	b := bridge.MustWorkflow("b", noop)
	reg := bridge.NewRegistry()
	if err := reg.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(b, bridge.MustWorkflow("a", noop)); !errors.Is(err, bridge.ErrDuplicateWorkflow) {
		t.Fatalf("duplicate with a registered id: %v", err)
	}
	if err := reg.Register(b, bridge.MustWorkflow("b", noop)); !errors.Is(err, bridge.ErrDuplicateWorkflow) {
		t.Fatalf("duplicate within one call: %v", err)
	}
	if err := reg.Register(nil); !errors.Is(err, bridge.ErrInvalidWorkflow) {
		t.Fatalf("nil workflow: %v", err)
	}
	// All or nothing: b was refused above, so it registers now.
	if err := reg.Register(b); err != nil {
		t.Fatalf("b after refused batches: %v", err)
	}

	defer func() {
		if err, _ := recover().(error); !errors.Is(err, bridge.ErrDuplicateWorkflow) {
			t.Fatalf("MustRegister recovered %v, want ErrDuplicateWorkflow", err)
		}
	}()
	reg.MustRegister(a)
}

func TestWorkflowDisplayTextBounds(t *testing.T) {
	fn := func(*bridge.Context, struct{}) error { return nil }
	if _, err := bridge.NewWorkflow("a", fn, bridge.WithName(strings.Repeat("é", bridge.MaxWorkflowName)),
		bridge.WithDescription(strings.Repeat("d", bridge.MaxWorkflowDescription))); err != nil {
		t.Fatalf("text at its bounds: %v", err)
	}
	for name, opt := range map[string]bridge.WorkflowOption{
		"long name":         bridge.WithName(strings.Repeat("n", bridge.MaxWorkflowName+1)),
		"long description":  bridge.WithDescription(strings.Repeat("d", bridge.MaxWorkflowDescription+1)),
		"not UTF-8":         bridge.WithName("\xff"),
		"control character": bridge.WithDescription("two\nlines"),
	} {
		if _, err := bridge.NewWorkflow("a", fn, opt); !errors.Is(err, bridge.ErrInvalidWorkflow) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
