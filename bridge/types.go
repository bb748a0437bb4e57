package bridge

import "github.com/heraldhq/herald/bridge/wire"

// The values a workflow reads and builds. They are the protocol's own
// shapes: what a step records is what the service sends back on replay.
type (
	// Subscriber is the run's single recipient as the service forwards it:
	// its id, contacts (kind → addresses), locale and attributes.
	Subscriber = wire.Subscriber
	// SendContent is what a [Send] step delivers.
	SendContent = wire.SendContent
	// SendResult is the output of a [Send] step: the delivery attempt the
	// service recorded.
	SendResult = wire.SendResult
	// DigestResult is the output of a [Digest] step.
	DigestResult = wire.DigestResult
	// DigestEvent is one trigger gathered by a [Digest] window.
	DigestEvent = wire.DigestEvent
)

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
