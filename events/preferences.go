package events

import "encoding/json"

// SubscriberPreferencesUpdated replaces a subscriber's preferences, on the
// subscriber's subject (aggregate subscriber, id = externalId): they are
// the subscriber's data, deleted with it and secure-deleted by an erase.
const SubscriberPreferencesUpdated = "SubscriberPreferencesUpdated"

// Actors of a preference change other than an API key.
const (
	// ActorPublicPage: the subscriber, through an unsubscribe link or the
	// preference page (CONTRACT §12).
	ActorPublicPage = "public-page"
)

// SubscriberPreferencesUpdatedData is the whole of a subscriber's
// preferences after a change: the writer merged the PATCH against the
// state as of the subject's previous event, so applying it is a plain
// overwrite.
type SubscriberPreferencesUpdatedData struct {
	SubscriberID string `json:"subscriberId"`
	// Preferences is the resulting document as CONTRACT §11 shows it
	// ({"channels":{…},"workflows":{…}}), compact JSON.
	Preferences json.RawMessage `json:"preferences"`
	// Actor is who made the change: the prefix of the API key that
	// authenticated the request ("hk_…", never the key), or
	// ActorPublicPage.
	Actor string `json:"actor"`
}

// WorkflowPreferences is what a workflow declares about preferences at
// discover: its default switch per channel kind.
type WorkflowPreferences struct {
	Channels map[string]bool `json:"channels,omitempty"`
}
