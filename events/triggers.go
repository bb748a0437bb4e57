package events

import "encoding/json"

// Trigger event types, on the transaction's subject (aggregate txn, id =
// transaction id).
const (
	TriggerAccepted         = "TriggerAccepted"
	NotificationsReceived   = "NotificationsReceived"
	NotificationsDispatched = "NotificationsDispatched"
	FanoutCompleted         = "FanoutCompleted"
)

// Notification log statuses.
const (
	NotificationReceived   = "received"
	NotificationDispatched = "dispatched"
	NotificationFailed     = "failed"
)

// Target is a trigger's `to`: exactly one of SubscriberID and Topics.
type Target struct {
	SubscriberID *string  `json:"subscriberId,omitempty"`
	Topics       []string `json:"topics,omitempty"`
}

// TriggerAcceptedData is the first event of a transaction: the trigger as
// accepted. Its payload is the one every run of the transaction sees.
type TriggerAcceptedData struct {
	TransactionID string          `json:"transactionId"`
	WorkflowID    string          `json:"workflowId"`
	To            Target          `json:"to"`
	Payload       json.RawMessage `json:"payload"`
	// Cron marks a schedule tick: one run with no subscriber.
	Cron bool `json:"cron,omitempty"`
	// RequestDigest is the hex SHA-256 of the canonical request (workflow
	// id, target, payload with sorted keys): a repeat of the transaction
	// id with another request is refused (transaction_mismatch). Empty in
	// events written before it existed; the digest is then computed from
	// the fields above.
	RequestDigest string `json:"requestDigest,omitempty"`
	// Recipients is set on a trigger whose audience was counted larger
	// than the threshold of an answer at once: the count at acceptance.
	// Such a trigger is answered before its fan-out, which goes on in the
	// background; a repeat of its transaction id answers the same.
	Recipients *int `json:"recipients,omitempty"`
}

// NotificationsReceivedData writes the ingress rows of a chunk of
// recipients with status received, before their runs are submitted.
type NotificationsReceivedData struct {
	WorkflowID    string   `json:"workflowId"`
	SubscriberIDs []string `json:"subscriberIds"`
}

// Dispatch is the outcome of submitting one recipient's run.
type Dispatch struct {
	SubscriberID string `json:"subscriberId"`
	RunID        string `json:"runId"`
	Status       string `json:"status"` // dispatched or failed
	Error        string `json:"error,omitempty"`
}

// NotificationsDispatchedData moves a chunk of ingress rows to dispatched
// (with the run id) or failed.
type NotificationsDispatchedData struct {
	Runs []Dispatch `json:"runs"`
}

// FanoutCompletedData marks a transaction's fan-out as finished.
type FanoutCompletedData struct {
	Count int `json:"count"`
}
