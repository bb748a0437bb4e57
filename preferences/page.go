package preferences

import (
	"encoding/json"
)

// Toggle is one box of the preference page: a workflow and a kind.
type Toggle struct{ Workflow, Kind string }

// Listed is one workflow as the preference page lists it.
type Listed struct {
	WorkflowID string
	Defaults   Defaults
}

// PagePatch returns the PATCH body (see [Patch]) that makes the page's
// submission true: for each non-critical workflow of listed and each of
// kinds, the send is allowed exactly when on holds its toggle. Only the
// toggles whose effective value (per [Allows] on d) changes are written,
// as the subscriber's workflow channel, so an untouched box keeps
// following the subscriber's global switch and the workflow's default. A
// workflow the subscriber disabled that gets any box turned on is enabled
// again, each of its boxes then written as submitted. Critical workflows
// are left alone: they cannot be turned off.
func PagePatch(d Doc, listed []Listed, kinds []string, on map[Toggle]bool) json.RawMessage {
	workflows := map[string]any{}
	for _, l := range listed {
		if l.Defaults.Critical {
			continue
		}
		w := d.Workflows[l.WorkflowID]
		disabled := w.Enabled != nil && !*w.Enabled
		reenable := false
		if disabled {
			for _, k := range kinds {
				reenable = reenable || on[Toggle{l.WorkflowID, k}]
			}
		}
		channels := map[string]bool{}
		for _, k := range kinds {
			want := on[Toggle{l.WorkflowID, k}]
			if reenable {
				// Without the workflow switch, what would it be?
				open := d.Clone()
				ow := open.Workflows[l.WorkflowID]
				ow.Enabled = nil
				open.Workflows[l.WorkflowID] = ow
				if Allows(open, l.WorkflowID, l.Defaults, k) != want {
					channels[k] = want
				}
				continue
			}
			if Allows(d, l.WorkflowID, l.Defaults, k) != want {
				channels[k] = want
			}
		}
		patch := map[string]any{}
		if reenable {
			patch["enabled"] = nil
		}
		if len(channels) > 0 {
			patch["channels"] = channels
		}
		if len(patch) > 0 {
			workflows[l.WorkflowID] = patch
		}
	}
	body, _ := json.Marshal(map[string]any{"workflows": workflows}) // maps of strings and bools: cannot fail
	return body
}
