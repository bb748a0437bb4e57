package events

import "encoding/json"

// InAppMessageStored: a send on an in_app channel stored its message in
// the recipient's inbox, on the subject of the aggregate inbox with the
// subscriber as id. MessageID is the delivery's provider message id.
const InAppMessageStored = "InAppMessageStored"

// InAppMessageStoredData is the payload of InAppMessageStored.
type InAppMessageStoredData struct {
	MessageID    string `json:"messageId"`
	SubscriberID string `json:"subscriberId"`
	WorkflowID   string `json:"workflowId,omitempty"`
	RunID        string `json:"runId"`
	StepID       string `json:"stepId"`
	// Content is the send step's in_app content (wire.InAppContent).
	Content json.RawMessage `json:"content"`
}
