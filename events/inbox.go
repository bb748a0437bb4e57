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

// InboxMessagesMarked: the subscriber changed the state of messages of
// its inbox (one message, or every one a read-all changed), on the
// subject of the aggregate inbox with the subscriber as id.
const InboxMessagesMarked = "InboxMessagesMarked"

// Marks of InboxMessagesMarked: the state change applied to each message.
const (
	MarkSeen       = "seen"
	MarkRead       = "read"
	MarkUnread     = "unread"
	MarkArchived   = "archived"
	MarkUnarchived = "unarchived"
)

// InboxMessagesMarkedData is the payload of InboxMessagesMarked. Only the
// messages whose state the mark changed are listed, at most a few hundred
// an event (a read-all of a full inbox is several events).
//
// Reading implies seen: a MarkRead lists the messages it made read, and
// the projection marks each of them seen too (at the same instant) when it
// was not; no MarkSeen is appended for them. A MarkUnread leaves a
// message seen. So a consumer of MarkSeen events (webhooks) does not see
// the messages that were first seen by being read.
type InboxMessagesMarkedData struct {
	SubscriberID string   `json:"subscriberId"`
	Mark         string   `json:"mark"`
	MessageIDs   []string `json:"messageIds"`
}

// InboxTokensRevoked: the tenant revoked every inbox token minted so far
// for a subscriber, on the subscriber's subject (aggregate subscriber).
// Tokens minted after it are accepted.
const InboxTokensRevoked = "InboxTokensRevoked"

// InboxTokensRevokedData is the payload of InboxTokensRevoked.
type InboxTokensRevokedData struct {
	SubscriberID string `json:"subscriberId"`
}
