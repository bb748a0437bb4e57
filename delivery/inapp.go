package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// inAppProvider is the provider of in-app channels: a send stores the
// message as an InAppMessageStored event on the recipient's inbox subject,
// which the projections turn into the subscriber's inbox. The message id
// is derived from the tenant and the idempotency key and is the event's
// dedupe id, so a retried unknown outcome stores the message once.
type inAppProvider struct{ log *eventlog.Log }

// newInAppProvider is the provider.New of in-app channels on log.
func newInAppProvider(log *eventlog.Log) provider.New {
	return func(map[string]any, provider.Deps) (provider.Provider, error) {
		return &inAppProvider{log: log}, nil
	}
}

func (p *inAppProvider) Send(ctx context.Context, m provider.Message) (string, error) {
	sum := sha256.Sum256([]byte(m.Tenant + "\x00" + m.IdempotencyKey))
	id := "msg_" + hex.EncodeToString(sum[:12])
	_, err := p.log.Append(ctx, eventlog.Record{
		Subject: eventlog.Subject(m.Tenant, eventlog.AggInbox, m.SubscriberID),
		Type:    events.InAppMessageStored, Tenant: m.Tenant, MsgID: id,
		Data: events.InAppMessageStoredData{MessageID: id, SubscriberID: m.SubscriberID, WorkflowID: m.WorkflowID,
			RunID: m.RunID, StepID: m.StepID, Content: m.Content},
	})
	if err != nil {
		return "", provider.Failf(provider.ErrOutcomeUnknown, err, "in-app: the message could not be stored")
	}
	return id, nil
}
