package webhooks

import (
	"crypto/sha256"
	"encoding/base32"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// workPrefix is the prefix of the work subjects of webhook messages.
const workPrefix = "work.webhook."

// workSubject is the subject of the messages of one endpoint.
func workSubject(tenant, webhookID string) string {
	return workPrefix + tenant + "." + eventlog.Token(webhookID)
}

// schedSubject holds the pending retry of one message.
func schedSubject(tenant, messageID string) string {
	return eventlog.SchedSubject(tenant, "webhook", messageID)
}

// Ref names the resource a webhook message tells of: the run, the
// delivery attempt, or the inbox message, and the webhook event type.
type Ref struct {
	// Type is the webhook event type (events.HookRunCompleted, …).
	Type         string `json:"type"`
	RunID        string `json:"runId,omitempty"`
	AttemptID    string `json:"attemptId,omitempty"`
	SubscriberID string `json:"subscriberId,omitempty"`
	MessageID    string `json:"messageId,omitempty"`
}

// message is a work message: one webhook message to one endpoint.
type message struct {
	Tenant    string `json:"tenant"`
	WebhookID string `json:"webhookId"`
	// ID is the webhook-id of the message.
	ID  string `json:"id"`
	Ref Ref    `json:"ref"`
	// Seq is the stream sequence of the event: the projections a sender
	// reads must have applied it.
	Seq uint64 `json:"seq"`
	// At is the event's time: the body's timestamp, and the start of the
	// 24 h of retries.
	At time.Time `json:"at"`
	// Attempts counts the attempts already made.
	Attempts int `json:"attempts,omitempty"`
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// messageID derives the webhook-id of the message of event eventID to
// endpoint webhookID, about item (an inbox message id; empty otherwise).
func messageID(webhookID, eventID, item string) string {
	h := sha256.Sum256([]byte(webhookID + "\x00" + eventID + "\x00" + item))
	return "msg_" + idEncoding.EncodeToString(h[:20])
}

// refs returns what the event tells endpoints: nothing for an event that
// maps to no webhook event type, one ref for a run's end or a delivery
// row, one per message of an inbox read or archive.
func refs(ev eventlog.Event) ([]Ref, error) {
	switch ev.Type {
	case events.RunCompleted, events.RunFailed, events.RunCancelled:
		_, _, runID, err := eventlog.ParseSubject(ev.Subject)
		if err != nil {
			return nil, err
		}
		typ := map[string]string{events.RunCompleted: events.HookRunCompleted, events.RunFailed: events.HookRunFailed,
			events.RunCancelled: events.HookRunCancelled}[ev.Type]
		return []Ref{{Type: typ, RunID: runID}}, nil
	case events.DeliverySent, events.DeliveryFailed, events.DeliverySkipped:
		var d struct {
			AttemptID string `json:"attemptId"`
		}
		if err := ev.Decode(&d); err != nil {
			return nil, err
		}
		typ := map[string]string{events.DeliverySent: events.HookDeliverySent, events.DeliveryFailed: events.HookDeliveryFailed,
			events.DeliverySkipped: events.HookDeliverySkipped}[ev.Type]
		return []Ref{{Type: typ, AttemptID: d.AttemptID}}, nil
	case events.DeliveryReported:
		var d events.DeliveryReportedData
		if err := ev.Decode(&d); err != nil {
			return nil, err
		}
		typ, ok := reportTypes[d.Status]
		if !ok {
			return nil, nil
		}
		return []Ref{{Type: typ, AttemptID: d.AttemptID}}, nil
	case events.InboxMessagesMarked:
		var d events.InboxMessagesMarkedData
		if err := ev.Decode(&d); err != nil {
			return nil, err
		}
		var typ string
		switch d.Mark {
		case events.MarkRead:
			typ = events.HookInboxRead
		case events.MarkArchived:
			typ = events.HookInboxArchived
		default:
			return nil, nil
		}
		out := make([]Ref, 0, len(d.MessageIDs))
		for _, id := range d.MessageIDs {
			out = append(out, Ref{Type: typ, SubscriberID: d.SubscriberID, MessageID: id})
		}
		return out, nil
	}
	return nil, nil
}

// sourceTypes maps each event type refs may map to a webhook event type
// to the webhook event types it may map to.
var sourceTypes = map[string][]string{
	events.RunCompleted:        {events.HookRunCompleted},
	events.RunFailed:           {events.HookRunFailed},
	events.RunCancelled:        {events.HookRunCancelled},
	events.DeliverySent:        {events.HookDeliverySent},
	events.DeliveryFailed:      {events.HookDeliveryFailed},
	events.DeliverySkipped:     {events.HookDeliverySkipped},
	events.InboxMessagesMarked: {events.HookInboxRead, events.HookInboxArchived},
	events.DeliveryReported: {events.HookDeliveryDelivered, events.HookDeliveryBounced, events.HookDeliveryComplained,
		events.HookDeliveryOpened, events.HookDeliveryClicked, events.HookDeliveryFailed},
}

// reportTypes maps the status of a provider's report to its webhook
// event type.
var reportTypes = map[string]string{
	events.ReportDelivered:  events.HookDeliveryDelivered,
	events.ReportBounced:    events.HookDeliveryBounced,
	events.ReportComplained: events.HookDeliveryComplained,
	events.ReportOpened:     events.HookDeliveryOpened,
	events.ReportClicked:    events.HookDeliveryClicked,
	events.ReportFailed:     events.HookDeliveryFailed,
}

// backoff is the delay before the attempt after the n-th failed one
// (n ≥ 1): base doubled n-1 times, capped at maxBackoff.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

const (
	maxBackoff = time.Hour
	// retryWindow is how long after its event a message is still tried.
	retryWindow = 24 * time.Hour
)
