package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/eventlog"
)

// ErrMessageGone is returned by Resend when the event a message told of
// is no longer in the log (erased), or names no such message.
var ErrMessageGone = errors.New("webhooks: the message's event is gone")

// Resend queues one more attempt of the message id to endpoint
// webhookID, after the attempts already made: the same webhook-id, body
// (rendered when it is sent) and signature scheme, read again from the
// event at eventSeq. nonce tells this resend apart from the message's
// first sending and from other resends (the work stream drops a message
// id it has seen), and makes a repeat of the same resend harmless.
func Resend(ctx context.Context, log *eventlog.Log, tenant, webhookID, id string, eventSeq uint64, attempts int, nonce string) error {
	ev, ok, err := log.EventAt(ctx, eventSeq)
	if err != nil {
		return err
	}
	if !ok || ev.TenantID != tenant {
		return ErrMessageGone
	}
	rs, err := refs(ev)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMessageGone, err)
	}
	for _, r := range rs {
		if messageID(webhookID, ev.ID, r.MessageID) != id {
			continue
		}
		data, err := json.Marshal(message{Tenant: tenant, WebhookID: webhookID, ID: id, Ref: r,
			Seq: ev.Seq, At: ev.At, Attempts: attempts})
		if err != nil {
			return err
		}
		return log.Enqueue(ctx, workSubject(tenant, webhookID), data, id+".resend."+nonce)
	}
	return ErrMessageGone
}
