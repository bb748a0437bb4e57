package bridge

import (
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

// The values a workflow reads and builds. They are the protocol's own
// shapes: what a step records is what the service sends back on replay.
type (
	// Subscriber is the run's single recipient as the service forwards it:
	// its id, contacts (kind → addresses), locale, attributes and time
	// zone.
	Subscriber = wire.Subscriber
	// SendContent is what a [Send] step delivers: a subject and a body.
	SendContent = wire.SendContent
	// SendResult is the output of a [Send] or [Notify] step: the delivery
	// attempt the service recorded, sent or [SendResult.Skipped].
	SendResult = wire.SendResult
	// Links are the unsubscribe and preference page URLs of a run's
	// subscriber: [Context.Links].
	Links = wire.Links
	// SkipReason is why the service skipped a send: [NoAddress],
	// [Preference] or [Suppressed].
	SkipReason = wire.SkipReason

	// EmailContent is the content of an email [Notify] step.
	EmailContent = wire.EmailContent
	// SMSContent is the content of an SMS [Notify] step.
	SMSContent = wire.SMSContent
	// ChatContent is the content of a chat [Notify] step.
	ChatContent = wire.ChatContent
	// PushContent is the content of a push [Notify] step.
	PushContent = wire.PushContent
	// InAppContent is the content of an in-app [Notify] step.
	InAppContent = wire.InAppContent
	// InAppAction is an in-app message's button.
	InAppAction = wire.InAppAction
	// WebhookContent is the content of a webhook [Notify] step.
	WebhookContent = wire.WebhookContent
	// DigestResult is the output of a [Digest] step.
	DigestResult = wire.DigestResult
	// DigestEvent is one trigger gathered by a [Digest] window.
	DigestEvent = wire.DigestEvent
	// ThrottleResult is the output of a [Throttle] step.
	ThrottleResult = wire.ThrottleResult
)

// ParseDuration reads a duration as the service writes one, for a
// workflow that takes a delay or a window in its payload: what
// time.ParseDuration accepts ("300ms", "10m", "1h30m"), optionally
// preceded by a number of days ("1d", "1.5d", "2d12h"). Signs and bare
// numbers are refused. It is the protocol's own reading, so a workflow
// needs no import of bridge/wire for it.
func ParseDuration(s string) (time.Duration, error) { return wire.ParseDuration(s) }

// LayoutID is the [EmailContent.Layout] that wraps an email's HTML in the
// tenant's layout id.
func LayoutID(id string) json.RawMessage {
	b, _ := json.Marshal(id) // a string always encodes
	return b
}

// NoLayout is the [EmailContent.Layout] that sends an email's HTML as it
// is, even when the tenant marked a default layout.
func NoLayout() json.RawMessage { return json.RawMessage("null") }

// Channel is a channel kind: where a [Send] step delivers. The service picks
// the tenant's channel of that kind and the subscriber's address for it.
type Channel string

// The channel kinds the service knows.
const (
	Email   Channel = "email"
	SMS     Channel = "sms"
	Chat    Channel = "chat"
	Push    Channel = "push"
	InApp   Channel = "in_app"
	Webhook Channel = "webhook"
)

// The reasons of a skipped send: a [SendResult] whose Skipped reports true
// has one of these as its Reason.
const (
	NoAddress  SkipReason = wire.SkipNoAddress  // the recipient has no address of the kind
	Preference SkipReason = wire.SkipPreference // the recipient opted out
	Suppressed SkipReason = wire.SkipSuppressed // the address is suppressed
)

// Content is the content of a [Notify] step: its type names the channel
// kind the step delivers on (EmailContent: [Email], and so on).
type Content interface {
	EmailContent | SMSContent | ChatContent | PushContent | InAppContent | WebhookContent
}

// channelOf is the channel kind content's type names.
func channelOf(content any) Channel {
	switch content.(type) {
	case EmailContent:
		return Email
	case SMSContent:
		return SMS
	case ChatContent:
		return Chat
	case PushContent:
		return Push
	case InAppContent:
		return InApp
	case WebhookContent:
		return Webhook
	}
	return ""
}
