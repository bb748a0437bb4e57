package events

import "encoding/json"

// Step controls and email layouts: content a tenant's teammates edit
// without a deploy.
const (
	// ControlsChanged sets or deletes the values of one step's controls
	// in one locale, on the workflow's controls subject (aggregate
	// controls, id = the workflow).
	ControlsChanged = "ControlsChanged"
	// LayoutSaved creates or replaces an email layout; LayoutDeleted
	// deletes one (aggregate layout, id = the layout).
	LayoutSaved   = "LayoutSaved"
	LayoutDeleted = "LayoutDeleted"
)

// ControlsChangedData is one version of a workflow's controls: the
// values of StepID in Locale after the change.
type ControlsChangedData struct {
	WorkflowID string `json:"workflowId"`
	StepID     string `json:"stepId"`
	// Locale is the canonical locale ("fr", "fr-CA"), or "default" for
	// the tenant's default content.
	Locale string `json:"locale"`
	// Values is the JSON object of the values, checked against the
	// step's schema when written; null when the change deletes them (the
	// locale then falls back).
	Values json.RawMessage `json:"values"`
	// Version numbers the changes of the workflow's controls, from 1.
	Version int `json:"version"`
	// RevertedFrom is the version whose values a revert restored; 0 for
	// an edit.
	RevertedFrom int `json:"revertedFrom,omitempty"`
	// Actor is who made the change: the prefix of the API key that
	// authenticated the request ("hk_…", never the key).
	Actor string `json:"actor"`
}

// LayoutSavedData is a layout as saved: its whole content.
type LayoutSavedData struct {
	LayoutID string `json:"layoutId"`
	Name     string `json:"name"`
	HTML     string `json:"html"`
	// Default marks the tenant's default layout: saving a layout as the
	// default unmarks the one before.
	Default bool   `json:"default"`
	Actor   string `json:"actor"`
}

// LayoutDeletedData deletes a layout.
type LayoutDeletedData struct {
	LayoutID string `json:"layoutId"`
	Actor    string `json:"actor"`
}
