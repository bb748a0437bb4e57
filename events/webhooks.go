package events

import "time"

// Outbound webhook event types. An endpoint's configuration lives on the
// subject of the aggregate webhook with the endpoint id as id
// (eventlog.Subject(tenant, AggWebhook, webhookId)); the attempts to
// deliver to it on the aggregate webhook attempts with the same id, so
// that recording an attempt never races a change of the configuration.
const (
	// WebhookCreated: POST /v1/webhooks created an endpoint.
	WebhookCreated = "WebhookCreated"
	// WebhookUpdated: PATCH /v1/webhooks/{id} changed url, events,
	// enabled or description.
	WebhookUpdated = "WebhookUpdated"
	// WebhookDeleted: DELETE /v1/webhooks/{id}.
	WebhookDeleted = "WebhookDeleted"
	// WebhookSecretRotated: POST /v1/webhooks/{id}/rotate-secret drew a
	// new signing secret; the previous one keeps signing until
	// PreviousUntil.
	WebhookSecretRotated = "WebhookSecretRotated"
	// WebhookAttempted: one HTTP attempt to deliver one webhook message,
	// and its outcome.
	WebhookAttempted = "WebhookAttempted"
	// WebhookResendRequested: POST /v1/webhooks/{id}/messages/{messageId}/resend
	// asked for one more attempt of a message.
	WebhookResendRequested = "WebhookResendRequested"
)

// WebhookResendRequestedData is the payload of WebhookResendRequested.
type WebhookResendRequestedData struct {
	WebhookID string `json:"webhookId"`
	MessageID string `json:"messageId"`
	// Actor is the prefix of the API key that asked ("hk_…", never the
	// key).
	Actor string `json:"actor,omitempty"`
}

// WebhookCreatedData is the payload of WebhookCreated.
type WebhookCreatedData struct {
	WebhookID   string   `json:"webhookId"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
	// SealedSecret is the signing secret sealed with WebhookSecretAAD,
	// never the secret in clear.
	SealedSecret string `json:"sealedSecret"`
}

// WebhookUpdatedData is the payload of WebhookUpdated. A nil field is
// left as it was.
type WebhookUpdatedData struct {
	WebhookID   string    `json:"webhookId"`
	URL         *string   `json:"url,omitempty"`
	Events      *[]string `json:"events,omitempty"`
	Enabled     *bool     `json:"enabled,omitempty"`
	Description *string   `json:"description,omitempty"`
}

// WebhookDeletedData is the payload of WebhookDeleted.
type WebhookDeletedData struct {
	WebhookID string `json:"webhookId"`
}

// WebhookSecretRotatedData is the payload of WebhookSecretRotated. Both
// secrets are sealed with WebhookSecretAAD.
type WebhookSecretRotatedData struct {
	WebhookID    string `json:"webhookId"`
	SealedSecret string `json:"sealedSecret"`
	// PreviousSealed is the secret the rotation replaced; messages are
	// signed with it too (a second signature) until PreviousUntil.
	PreviousSealed string `json:"previousSealed"`
	// PreviousUntil is when the previous secret stops signing.
	PreviousUntil time.Time `json:"previousUntil"`
}

// Statuses of a webhook attempt.
const (
	WebhookSucceeded = "succeeded"
	WebhookFailed    = "failed"
)

// WebhookAttemptedData is the payload of WebhookAttempted. It holds no
// personal data: the message is named by its ids, not its body.
type WebhookAttemptedData struct {
	WebhookID string `json:"webhookId"`
	// MessageID is the webhook message's id: the webhook-id header, the
	// same on every attempt of the message.
	MessageID string `json:"messageId"`
	// Type is the webhook event type (run.completed, …).
	Type string `json:"type"`
	// Status is WebhookSucceeded or WebhookFailed.
	Status string `json:"status"`
	// HTTPStatus is the receiver's status code; 0 when none came (refused,
	// unreachable, timed out).
	HTTPStatus int `json:"httpStatus"`
	// Attempt counts the message's attempts from 1.
	Attempt int `json:"attempt"`
	// Final: no attempt of the message follows (it succeeded, its retries
	// ran out, or it failed terminally).
	Final bool `json:"final,omitempty"`
	// EventAt is when the event the message tells of happened.
	EventAt time.Time `json:"eventAt"`
	// EventSeq is the stream sequence of that event: what a resend of the
	// message reads it again from. Zero in attempts recorded before.
	EventSeq uint64 `json:"eventSeq,omitempty"`
}

// WebhookSecretAAD is the additional data an endpoint's signing secret is
// sealed with: "<tenant>/webhook/<webhookId>/secret".
func WebhookSecretAAD(tenant, webhookID string) []byte {
	return []byte(tenant + "/webhook/" + webhookID + "/secret")
}

// The webhook event types an endpoint subscribes to (CONTRACT §14), and
// WebhookAll, which subscribes to every one.
const (
	HookRunCompleted    = "run.completed"
	HookRunFailed       = "run.failed"
	HookRunCancelled    = "run.cancelled"
	HookDeliverySent    = "delivery.sent"
	HookDeliveryFailed  = "delivery.failed"
	HookDeliverySkipped = "delivery.skipped"
	HookInboxRead       = "inbox.read"
	HookInboxArchived   = "inbox.archived"
	WebhookAll          = "*"
)

// The webhook event types of what providers report of a sent message
// (DeliveryReported): one per status but failed, which is
// HookDeliveryFailed.
const (
	HookDeliveryDelivered  = "delivery.delivered"
	HookDeliveryBounced    = "delivery.bounced"
	HookDeliveryComplained = "delivery.complained"
	HookDeliveryOpened     = "delivery.opened"
	HookDeliveryClicked    = "delivery.clicked"
)

// WebhookTypes lists every webhook event type.
var WebhookTypes = []string{HookRunCompleted, HookRunFailed, HookRunCancelled, HookDeliverySent,
	HookDeliveryFailed, HookDeliverySkipped, HookInboxRead, HookInboxArchived,
	HookDeliveryDelivered, HookDeliveryBounced, HookDeliveryComplained, HookDeliveryOpened, HookDeliveryClicked}
