package events

import "encoding/json"

// Subscriber event types, on the subscriber's subject (aggregate
// subscriber, id = externalId).
const (
	SubscriberUpserted = "SubscriberUpserted"
	SubscriberDeleted  = "SubscriberDeleted"
	// SubscriberErased deletes the subscriber and marks its personal data
	// erased: the writer secure-deletes the events that held it, and every
	// projection drops it (and compacts its file).
	SubscriberErased = "SubscriberErased"
)

// Topic and subscription event types, all on the topic's subject
// (aggregate topic, id = key): a topic delete appended with the subject's
// expected sequence conflicts with every subscribe appended since the
// delete read the topic, which makes its "no subscribers" check race-free.
const (
	TopicUpserted          = "TopicUpserted"
	TopicDeleted           = "TopicDeleted"
	SubscriberSubscribed   = "SubscriberSubscribed"
	SubscriberUnsubscribed = "SubscriberUnsubscribed"
	// SubscribersSubscribed is many SubscriberSubscribed of one topic in
	// one event: a bulk import writes one per topic, not one per link.
	SubscribersSubscribed = "SubscribersSubscribed"
)

// SubscriberUpsertedData is the whole state of a subscriber after an
// upsert: the merge rules were applied by the writer against the state as
// of the subject's previous event, so applying it is a plain overwrite.
type SubscriberUpsertedData struct {
	SubscriberID string `json:"subscriberId"`
	// Contacts maps a channel kind to its addresses; a kind with no
	// address is absent. Never nil.
	Contacts map[string][]string `json:"contacts"`
	// Locale is nil when the subscriber has none.
	Locale *string `json:"locale,omitempty"`
	// Attributes is a compact JSON object, or empty when there is none.
	Attributes json.RawMessage `json:"attributes,omitempty"`
	// Timezone is an IANA time zone name, nil when the subscriber has
	// none (UTC is then its time).
	Timezone *string `json:"timezone,omitempty"`
}

// SubscriberDeletedData removes a subscriber and every subscription it
// holds.
type SubscriberDeletedData struct {
	SubscriberID string `json:"subscriberId"`
}

// SubscriberErasedData names the erased subscriber, and nothing else of it.
type SubscriberErasedData struct {
	SubscriberID string `json:"subscriberId"`
}

// TopicUpsertedData is the whole explicit metadata of a topic after an
// explicit create or update (an omitted field was kept by the writer).
// A nil field means the topic has no value for it.
type TopicUpsertedData struct {
	Key         string  `json:"key"`
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
}

// TopicDeletedData removes a topic that had no subscribers.
type TopicDeletedData struct {
	Key string `json:"key"`
}

// SubscriberSubscribedData links a subscriber to a topic. Applying it
// creates the topic, key only, when absent; it is ignored when the
// subscriber does not exist (any more) or is already subscribed.
type SubscriberSubscribedData struct {
	SubscriberID string `json:"subscriberId"`
	TopicKey     string `json:"topicKey"`
}

// SubscribersSubscribedData links each of SubscriberIDs to a topic:
// applying it is applying SubscriberSubscribedData for each id in order
// (an id whose subscriber does not exist, or is subscribed already, is
// skipped), at the event's sequence.
type SubscribersSubscribedData struct {
	TopicKey      string   `json:"topicKey"`
	SubscriberIDs []string `json:"subscriberIds"`
}

// SubscriberUnsubscribedData removes the link, when present.
type SubscriberUnsubscribedData struct {
	SubscriberID string `json:"subscriberId"`
	TopicKey     string `json:"topicKey"`
}
