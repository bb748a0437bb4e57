package events

// Delivery ledger event types (the egress ledger), on the subject of the
// aggregate delivery with the idempotency key as id
// (eventlog.Subject(tenant, AggDelivery, idempotencyKey)). One subject is
// one key: its events are attempts, each followed by its outcome.
//
//	DeliveryAttempted → DeliverySent             (the key is sent for good)
//	DeliveryAttempted → DeliveryFailed           (a later request may attempt again)
//	DeliveryAttempted → DeliveryAttempted        (a stale claim taken over after its lease)
//	DeliverySkipped                              (nothing sent on purpose: final)
//
// One send may try several channels of its kind: each try is an
// attempt (a ledger row) with its channelKey.
//
// Every append on the subject expects the subject's last sequence, so two
// writers never both claim one key.
const (
	// DeliveryAttempted claims the key for one attempt, written just
	// before the provider is called.
	DeliveryAttempted = "DeliveryAttempted"
	// DeliverySent: the provider accepted the message of the attempt.
	DeliverySent = "DeliverySent"
	// DeliveryFailed: the provider refused the message of the attempt, or
	// could not be reached.
	DeliveryFailed = "DeliveryFailed"
	// DeliverySkipped: the send was skipped on purpose (the recipient has
	// no address of the kind); the key answers the skip from then on.
	DeliverySkipped = "DeliverySkipped"
)

// DeliveryAttempt is what every row of the egress ledger says of itself,
// from its event to the API's view: the attempt, the send (idempotency
// key) of which step of which run, to which subscriber, through which
// channel.
type DeliveryAttempt struct {
	AttemptID      string `json:"attemptId"`
	IdempotencyKey string `json:"idempotencyKey"`
	RunID          string `json:"runId"`
	StepID         string `json:"stepId"`
	// SubscriberID is the recipient subscriber.
	SubscriberID string `json:"subscriberId"`
	// ChannelKey is the channel of the attempt; of a skipped send, the
	// channel the send would have used first.
	ChannelKey string `json:"channelKey"`
	Kind       string `json:"kind"`
}

// DeliveryAttemptedData is the payload of DeliveryAttempted. It holds no
// channel config: never a secret.
type DeliveryAttemptedData struct {
	DeliveryAttempt
	// Address is the recipient's address: the first of contacts[kind].
	Address string `json:"address"`
	// Takeover is the attempt id of a stale in-flight attempt this one
	// replaces (its lease ran out, or its process is known dead, with no
	// outcome); empty otherwise.
	Takeover string `json:"takeover,omitempty"`
	// Process identifies the herald serve process (one start of it) that
	// claimed the attempt; empty in attempts recorded before it existed.
	Process string `json:"process,omitempty"`
	// Present: the claiming process keeps a presence key (see
	// eventlog.Presence) for as long as it lives, so an attempt it left
	// in flight may be taken over as soon as the key is gone. False in
	// attempts of processes that keep none (they hold their lease).
	Present bool `json:"present,omitempty"`
}

// DeliverySentData is the payload of DeliverySent.
type DeliverySentData struct {
	AttemptID string `json:"attemptId"`
	// ProviderMessageID is the provider's id of the message (for SMTP the
	// Message-ID header without angle brackets).
	ProviderMessageID string `json:"providerMessageId"`
}

// DeliveryFailedData is the payload of DeliveryFailed.
type DeliveryFailedData struct {
	AttemptID string `json:"attemptId"`
	// Code is provider_rejected (a permanent refusal) or
	// provider_unavailable (transient: a 4xx reply, network, timeout).
	Code string `json:"code"`
	// Message describes the failure; it never holds a secret.
	Message string `json:"message"`
	// Transient reports whether a later attempt may succeed.
	Transient bool `json:"transient"`
	// Pin, when set, is the channel key every later attempt of the key
	// must use: the attempt's outcome is unknown (the message may have been
	// handed over), or the attempt was itself pinned. Failing over to
	// another channel could send the message twice.
	Pin string `json:"pin,omitempty"`
}

// DeliverySkippedData is the payload of DeliverySkipped: a ledger row
// with no attempt at a provider.
type DeliverySkippedData struct {
	DeliveryAttempt
	// Reason is why: "no_address", "suppressed".
	Reason string `json:"reason"`
}

// DeliveryReported: the provider of a sent message reported what became
// of it afterwards (delivered, bounced, …), through the channel's inbound
// URL. It lives on a subject of its own under the aggregate delivery,
// ReportSubjectID(channelKey, providerEventID), appended only while that
// subject is empty: a provider's retries of one event are recorded once.
// It holds no address and nothing of the message: erasing a subscriber
// leaves nothing of theirs in it.
const DeliveryReported = "DeliveryReported"

// Statuses a provider reports of a sent message.
const (
	ReportDelivered  = "delivered"
	ReportBounced    = "bounced"
	ReportComplained = "complained"
	ReportOpened     = "opened"
	ReportClicked    = "clicked"
	ReportFailed     = "failed"
)

// Bounce types of a ReportBounced.
const (
	BounceHard = "hard" // the address does not exist or refuses mail for good
	BounceSoft = "soft" // a mailbox full, a server down for now
)

// DeliveryReportedData is the payload of DeliveryReported.
type DeliveryReportedData struct {
	// AttemptID is the ledger row of the sent message the report is of.
	AttemptID  string `json:"attemptId"`
	ChannelKey string `json:"channelKey"`
	// Status is one of the Report constants.
	Status string `json:"status"`
	// Bounce is BounceHard or BounceSoft for a ReportBounced, else empty.
	Bounce string `json:"bounce,omitempty"`
	// ProviderEventID is the provider's id of its event (the dedupe key).
	ProviderEventID string `json:"providerEventId"`
	// Detail is a short code the provider gave (an error code, a bounce
	// sub-type); never free text that could quote the recipient.
	Detail string `json:"detail,omitempty"`
}

// ReportSubjectID is the id, under the aggregate delivery, of the subject
// of one provider event: "report:<channelKey>:<providerEventID>". An
// idempotency key is "<runId>:<stepId>" with a minted run id, which never
// starts with "report:".
func ReportSubjectID(channelKey, providerEventID string) string {
	return "report:" + channelKey + ":" + providerEventID
}
