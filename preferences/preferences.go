package preferences

import (
	"maps"
	"regexp"
	"slices"
)

// Kinds are the channel kinds a preference may name (CONTRACT §10), in
// the order pages list them.
var Kinds = []string{"email", "sms", "chat", "push", "in_app", "webhook"}

// Bounds of one document.
const (
	// MaxWorkflows bounds the workflows one document names: as many as
	// one sync records.
	MaxWorkflows = 1000
	// MaxWorkflowIDChars bounds a workflow id, as triggers do.
	MaxWorkflowIDChars = 128
)

// Doc is a subscriber's preferences: only what was set. The zero value is
// a subscriber who set nothing. Maps may be nil; [Patch] returns them
// non-nil.
type Doc struct {
	// Channels maps a kind to the subscriber's switch for every workflow.
	Channels map[string]bool `json:"channels"`
	// Workflows maps a workflow id to the subscriber's switches for it. A
	// workflow with nothing set is absent.
	Workflows map[string]Workflow `json:"workflows"`
	// QuietHours is nil when unset (see [QuietHold]).
	QuietHours *QuietHours `json:"quietHours,omitempty"`
}

// Workflow is a subscriber's preferences for one workflow.
type Workflow struct {
	// Enabled is nil when unset; false turns off every non-critical send
	// of the workflow.
	Enabled *bool `json:"enabled,omitempty"`
	// Channels maps a kind to the subscriber's switch for this workflow.
	Channels map[string]bool `json:"channels,omitempty"`
}

// empty reports whether w sets nothing.
func (w Workflow) empty() bool { return w.Enabled == nil && len(w.Channels) == 0 }

// Empty reports whether d sets nothing.
func (d Doc) Empty() bool {
	return len(d.Channels) == 0 && len(d.Workflows) == 0 && d.QuietHours == nil
}

// Clone returns a deep copy of d with non-nil maps.
func (d Doc) Clone() Doc {
	out := Doc{Channels: maps.Clone(d.Channels), Workflows: make(map[string]Workflow, len(d.Workflows))}
	if out.Channels == nil {
		out.Channels = map[string]bool{}
	}
	for id, w := range d.Workflows {
		c := Workflow{Channels: maps.Clone(w.Channels)}
		if w.Enabled != nil {
			v := *w.Enabled
			c.Enabled = &v
		}
		out.Workflows[id] = c
	}
	if d.QuietHours != nil {
		q := *d.QuietHours
		out.QuietHours = &q
	}
	return out
}

// Equal reports whether a and b set the same values.
func Equal(a, b Doc) bool {
	if (a.QuietHours == nil) != (b.QuietHours == nil) || a.QuietHours != nil && *a.QuietHours != *b.QuietHours {
		return false
	}
	return maps.Equal(a.Channels, b.Channels) && maps.EqualFunc(a.Workflows, b.Workflows, func(x, y Workflow) bool {
		return (x.Enabled == nil) == (y.Enabled == nil) && (x.Enabled == nil || *x.Enabled == *y.Enabled) &&
			maps.Equal(x.Channels, y.Channels)
	})
}

// Defaults is what a workflow declares at discover about preferences.
type Defaults struct {
	// Critical workflows send whatever the subscriber set.
	Critical bool `json:"critical,omitempty"`
	// Channels maps a kind to the workflow's default switch, used when
	// the subscriber set neither the workflow's nor the global one.
	Channels map[string]bool `json:"channels,omitempty"`
}

// Allows reports whether a send of kind in workflow goes out to a
// subscriber with preferences d, the workflow declaring def (CONTRACT
// §11): a critical workflow always sends; otherwise the send is skipped
// when d disables the workflow, or when the first value set among d's
// workflow channel, d's channel and def's channel is false; with none
// set it goes out.
func Allows(d Doc, workflow string, def Defaults, kind string) bool {
	if def.Critical {
		return true
	}
	w := d.Workflows[workflow]
	if w.Enabled != nil && !*w.Enabled {
		return false
	}
	for _, m := range []map[string]bool{w.Channels, d.Channels, def.Channels} {
		if v, ok := m[kind]; ok {
			return v
		}
	}
	return true
}

// IsKind reports whether k is one of [Kinds].
func IsKind(k string) bool { return slices.Contains(Kinds, k) }

// workflowIDPattern is the workflow id rule of the Bridge protocol
// (bridge/wire.ValidWorkflowID).
var workflowIDPattern = regexp.MustCompile(`^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$`)

// ValidWorkflowID reports whether id may name a workflow in a document.
func ValidWorkflowID(id string) bool {
	return len(id) <= MaxWorkflowIDChars && workflowIDPattern.MatchString(id)
}
