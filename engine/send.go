package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/preferences"
)

// send hands a send step to delivery under the key <runId>:<stepId>, so
// that a step run again after a crash sends at most once.
func (t *turn) send(ctx context.Context, s *wire.Step) (verdict, error) {
	to := t.st.SubscriberID
	if s.To != nil {
		to = s.To
	}
	recipient := ""
	switch {
	case to != nil:
		recipient = *to
	case s.Channel != delivery.KindWebhook: // a webhook needs no recipient
		return t.fail(ctx, s.StepID, apierr.CodeNoAddress, "the run has no subscriber and the send step names no `to`")
	}
	if v, ended, err := t.endIfCancelled(ctx); ended || err != nil {
		return v, err
	}
	// One decision, from one read of the projections as a delivery reads
	// them: held by the quiet hours (unless this is the send of a hold
	// that is over), or sent by Deliver as decided.
	d, err := delivery.Decide(ctx, t.e.store, delivery.Ask{Tenant: t.tenant, Workflow: t.st.WorkflowID,
		Subscriber: recipient, Kind: s.Channel, Seen: t.seen, Now: t.e.now()})
	if err != nil {
		// Read as a delivery's own reads are (the projections lag,
		// or failed): the step is tried again.
		if isCanceled(ctx, err) {
			return verdict{}, err
		}
		f := delivery.Classify(err)
		return t.retry(ctx, s.StepID, string(s.Type), f.Code, f.Message)
	}
	heldUntil, held := t.st.HeldSend(s.StepID)
	if !held && d.Verdict() == delivery.VerdictHold {
		return goOn, t.holdSend(ctx, s.StepID, d.Hold)
	}
	res, err := t.e.deliver.Deliver(ctx, t.tenant, delivery.Request{
		IdempotencyKey: t.st.RunID + ":" + s.StepID, RunID: t.st.RunID, StepID: s.StepID,
		SubscriberID: recipient, Channel: s.Channel, Content: s.Content, WorkflowID: t.st.WorkflowID,
		Seen: t.seen, Decision: &d})
	if err != nil {
		if isCanceled(ctx, err) {
			return verdict{}, err
		}
		f := delivery.Classify(err)
		if f.Terminal {
			return t.fail(ctx, s.StepID, f.Code, f.Message)
		}
		return t.retry(ctx, s.StepID, string(s.Type), f.Code, f.Message)
	}
	var until *time.Time
	if held {
		until = &heldUntil
	}
	out, err := sendResult(res, until)
	if err != nil {
		return verdict{}, err
	}
	// Held until the next write: the run's end usually (see hold).
	return goOn, t.hold(ctx, events.StepCompletedData{StepID: s.StepID, Type: string(s.Type), Output: out})
}

// sendResult is the output of a send step: the wire's SendResult of the
// delivery's result (the two share their JSON names).
func sendResult(res delivery.Result, heldUntil *time.Time) (json.RawMessage, error) {
	return json.Marshal(wire.SendResult{AttemptID: res.AttemptID, Status: res.Status,
		Reason: wire.SkipReason(res.Reason), ProviderMessageID: res.ProviderMessageID, HeldUntil: heldUntil})
}

// holdSend records that quiet hours hold the send stepID until h.Until:
// the run sleeps, and at h.Until asks the Bridge for the step again and
// sends it (see Decide). The decision is on record, so a crash neither
// loses the hold nor takes it again.
func (t *turn) holdSend(ctx context.Context, stepID string, h preferences.Hold) error {
	window, err := json.Marshal(h.Window)
	if err != nil {
		return err
	}
	return t.record(ctx, events.RunSleeping, events.RunSleepingData{StepID: stepID, Until: h.Until.UTC(),
		Type: string(wire.StepSend), Reason: events.SleepQuietHours, QuietHours: window, Timezone: h.Timezone})
}
