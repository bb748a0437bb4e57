package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/apierr"
)

// ReasonNoChannel: the tenant has no enabled channel of the kind; the
// send would fail (no_channel), not be skipped.
const ReasonNoChannel = apierr.CodeNoChannel

// Explanation is what a send of one channel kind to a subscriber would do
// if it were made now.
type Explanation struct {
	Kind string `json:"kind"`
	// Sends: the send would be handed to a channel.
	Sends bool `json:"sends"`
	// Reason is why it would not: a skipped send's reason (preference,
	// no_address, suppressed) or no_channel.
	Reason string `json:"reason,omitempty"`
	// Channels are the keys of the channels it would try, in order.
	Channels []string `json:"channels"`
	// HeldUntil, when set, is the end of the subscriber's quiet hours: a
	// send made now would wait until then, then go out (Sends).
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
}

// explained are the kinds Explain answers for: every kind a subscriber
// receives (a webhook send goes to the tenant's endpoint, not to them).
var explained = []string{KindEmail, KindSMS, KindChat, KindPush, KindInApp}

// Explain says, for each kind, whether a send of workflowID's run to the
// subscriber would go out now, why not, and whether the subscriber's
// quiet hours would hold it. It decides through the same steps a send
// takes (resolve, then QuietHold as the engine asks it) and records
// nothing.
func (s *Service) Explain(ctx context.Context, tenant, subscriberID, workflowID string) ([]Explanation, error) {
	out := make([]Explanation, 0, len(explained))
	for _, kind := range explained {
		e := Explanation{Kind: kind, Channels: []string{}}
		p, err := s.resolve(ctx, tenant, Request{SubscriberID: subscriberID, Channel: kind, WorkflowID: workflowID})
		switch {
		case errors.Is(err, ErrNoChannel):
			e.Reason = ReasonNoChannel
		case err != nil:
			return nil, err
		default:
			for _, ch := range p.channels {
				e.Channels = append(e.Channels, ch.ChannelKey)
			}
			e.Reason, e.Sends = p.skip, p.skip == ""
		}
		if e.Sends {
			hold, err := QuietHold(ctx, s.cfg.Store, tenant, workflowID, subscriberID, kind, 0, time.Now())
			if err != nil {
				return nil, err
			}
			if hold.Held() {
				e.HeldUntil = &hold.Until
			}
		}
		out = append(out, e)
	}
	return out, nil
}
