package delivery

import (
	"context"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/preferences"
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
// quiet hours would hold it: the Decision a send acts on (Decide), read
// after every write acknowledged before the call. It records nothing.
func (s *Service) Explain(ctx context.Context, tenant, subscriberID, workflowID string) ([]Explanation, error) {
	if err := s.cfg.Store.WaitCaughtUp(ctx, s.cfg.Log); err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]Explanation, 0, len(explained))
	for _, kind := range explained {
		d, err := Decide(ctx, s.cfg.Store, Ask{Tenant: tenant, Workflow: workflowID, Subscriber: subscriberID,
			Kind: kind, Now: now})
		if err != nil {
			return nil, err
		}
		out = append(out, explain(d))
	}
	return out, nil
}

// explain is the Explanation of d: what the send does once any hold is
// over, and the hold of a send that then goes out. It is pure.
func explain(d Decision) Explanation {
	hold := d.Hold
	d.Hold = preferences.Hold{}
	e := Explanation{Kind: d.Ask.Kind, Sends: d.Verdict() == VerdictSend, Reason: d.Reason(), Channels: d.ChannelKeys()}
	if e.Sends && hold.Held() {
		e.HeldUntil = &hold.Until
	}
	return e
}
