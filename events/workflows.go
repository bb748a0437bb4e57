package events

import (
	"encoding/json"
	"time"
)

// Workflow and digest event types.
const (
	// WorkflowsSynced records the workflows a Bridge reported at a sync,
	// on the tenant's workflows subject (aggregate workflows, id = tenant).
	WorkflowsSynced = "WorkflowsSynced"
	// Digest window events, on the digest subject (aggregate digest, id =
	// DigestID(workflow, subscriber, key)).
	DigestOpened = "DigestOpened"
	DigestJoined = "DigestJoined"
	DigestClosed = "DigestClosed"
)

// SyncedWorkflow is one workflow as of a sync.
type SyncedWorkflow struct {
	WorkflowID string `json:"workflowId"`
	// Schedule is the cron expression as the Bridge gave it (an optional
	// "CRON_TZ=Area/City " prefix names its time zone); nil when the
	// workflow is event-triggered.
	Schedule      *string         `json:"schedule"`
	PayloadSchema json.RawMessage `json:"payloadSchema,omitempty"`
	// Critical workflows send whatever a subscriber's preferences say.
	Critical bool `json:"critical,omitempty"`
	// Preferences holds the workflow's default preferences; nil for none.
	Preferences *WorkflowPreferences `json:"preferences,omitempty"`
	// Name and Description are the workflow's display name and sentence,
	// as the Bridge declared them (bounded by control); empty for none.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Controls are the JSON Schemas of each step's controls (step id →
	// schema), as the Bridge declared them (checked by control); nil for
	// none.
	Controls map[string]json.RawMessage `json:"controls,omitempty"`
}

// WorkflowsSyncedData is the whole list of a sync: it replaces the last.
type WorkflowsSyncedData struct {
	Workflows []SyncedWorkflow `json:"workflows"`
}

// DigestID names the digest of one (workflow, subscriber, key).
func DigestID(workflow, subscriber, key string) string {
	return workflow + "\x00" + subscriber + "\x00" + key
}

// DigestOpenedData opens a window; its id is the opening run's id.
type DigestOpenedData struct {
	Window   string    `json:"window"`
	StepID   string    `json:"stepId"`
	ClosesAt time.Time `json:"closesAt"`
}

// DigestJoinedData adds a run's payload to an open window.
type DigestJoinedData struct {
	Window  string          `json:"window"`
	RunID   string          `json:"runId"`
	Payload json.RawMessage `json:"payload"`
}

// DigestClosedData closes a window: nothing joins it after.
type DigestClosedData struct {
	Window string `json:"window"`
}
