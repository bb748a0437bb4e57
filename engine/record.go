package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// A turn's writes to its run each expect the state's last sequence: one
// writer wins, a loser gets eventlog.ErrConflict and re-reads (see steps).
// The state cache never holds what the log does not.

// record appends an event to the run expecting the state's last sequence
// and folds it into the state. A completion the turn holds is appended
// first, except before the run's end with no frozen subscriber held: the
// two then go in one RunCompleted, the last step and the end together. A
// frozen subscriber is appended first too, except before a completed step
// with no completion held: the two then go in one RunSubscriberRecorded,
// the subscriber and the run's first answer together.
func (t *turn) record(ctx context.Context, typ string, data any) error {
	if d, ok := data.(events.StepCompletedData); ok && t.frozen != nil && t.resumed == nil {
		t.frozen = nil
		typ, data = events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: t.st.Subscriber, Step: &d,
			Controls: t.st.Controls, Locale: t.st.Locale}
	}
	held := false // the state already holds the step data carries
	if _, ok := data.(events.RunCompletedData); ok && t.held != nil && t.frozen == nil {
		held, data = true, events.RunCompletedData{Step: t.held}
		t.resumed, t.held = nil, nil
	}
	if err := t.flush(ctx); err != nil {
		return err
	}
	rec, raw, err := t.newRecord(typ, data)
	if err != nil {
		return err
	}
	seq, err := t.e.log.Append(ctx, rec)
	if err != nil {
		return err
	}
	if held {
		raw = json.RawMessage(`{}`)
	}
	if err := t.st.Apply(eventlog.Event{Type: typ, TenantID: t.tenant, At: rec.At, Data: raw, Seq: seq, Subject: rec.Subject}); err != nil {
		return err
	}
	t.e.states.put(t.st)
	return nil
}

// newRecord is an event of the run that expects the state's last sequence.
func (t *turn) newRecord(typ string, data any) (eventlog.Record, json.RawMessage, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return eventlog.Record{}, nil, err
	}
	return eventlog.Record{Subject: eventlog.Subject(t.tenant, eventlog.AggRun, t.st.RunID), Type: typ, Tenant: t.tenant,
		Data: json.RawMessage(raw), Expect: true, ExpectSeq: t.st.LastSeq, At: t.e.now().UTC()}, raw, nil
}

// resume completes the pending delay or wait in the turn's state only
// (see hold), so that a woken run's workflow resumes one append sooner.
func (t *turn) resume(ctx context.Context, act Action) error {
	return t.hold(ctx, events.StepCompletedData{
		StepID: act.StepID, Type: act.StepType, Output: act.Output, SignalSeq: act.SignalSeq})
}

// hold completes a step in the turn's state only: the Bridge call it leads
// to goes first, and the StepCompleted is appended right after it (flush),
// or goes in the run's RunCompleted when the Bridge answers that the run
// is over (record). Nothing is lost by the order: until the append, the
// log still says the step is to be done, and a turn that ends before it
// (an error, a crash) leaves the run to do it again: a delay or a wait
// resumes again, a send is asked of delivery again under the same
// idempotency key, which answers its first result without sending. The
// state is a copy until then, so the cache never holds what the log does
// not. A completion or a frozen subscriber held already is appended first.
func (t *turn) hold(ctx context.Context, d events.StepCompletedData) error {
	if t.resumed != nil || t.frozen != nil {
		if err := t.flush(ctx); err != nil {
			return err
		}
	}
	rec, raw, err := t.newRecord(events.StepCompleted, d)
	if err != nil {
		return err
	}
	st := t.st.Clone()
	if err := st.Apply(eventlog.Event{Type: rec.Type, TenantID: t.tenant, At: rec.At, Data: raw, Subject: rec.Subject}); err != nil {
		return err
	}
	t.st, t.resumed, t.held = st, &rec, &d
	return nil
}

// subscriber is the run's subscriber as every execute request of the run
// carries it: the one frozen at the run's first turn. A run not yet
// answered freezes the current one now, in the turn's state only: the
// record is appended with the turn's next write, before the answer it
// led to (flush) or in the same event as a `run` step's result (record),
// so that no answer is on record without it. A run
// answered without one (started before subscribers were frozen, or whose
// subscriber was erased) reads the current subscriber at every turn.
func (t *turn) subscriber() (*wire.Subscriber, error) {
	if t.st.SubscriberID == nil {
		return nil, nil
	}
	if len(t.st.Subscriber) > 0 {
		var sub wire.Subscriber
		if err := json.Unmarshal(t.st.Subscriber, &sub); err != nil {
			return nil, fmt.Errorf("run %s: recorded subscriber: %w", t.st.RunID, err)
		}
		return &sub, nil
	}
	sub := t.e.subscriber(t.tenant, t.st.SubscriberID)
	if t.st.Answered() {
		return sub, nil
	}
	raw, err := json.Marshal(sub)
	if err != nil {
		return nil, err
	}
	rec, data, err := t.newRecord(events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: raw})
	if err != nil {
		return nil, err
	}
	st := t.st.Clone()
	if err := st.Apply(eventlog.Event{Type: rec.Type, TenantID: t.tenant, At: rec.At, Data: data, Subject: rec.Subject}); err != nil {
		return nil, err
	}
	t.st, t.frozen = st, &rec
	return sub, nil
}

// flush appends what the turn holds and the log does not: the frozen
// subscriber, then the held completion, if any.
func (t *turn) flush(ctx context.Context) error {
	if rec := t.frozen; rec != nil {
		t.frozen = nil
		seq, err := t.e.log.Append(ctx, *rec)
		if err != nil {
			return err
		}
		t.st.LastSeq = seq
		if t.resumed != nil {
			t.resumed.ExpectSeq = seq
		}
		t.e.states.put(t.st)
	}
	rec := t.resumed
	if rec == nil {
		return nil
	}
	t.resumed, t.held = nil, nil
	seq, err := t.e.log.Append(ctx, *rec)
	if err != nil {
		return err
	}
	t.st.LastSeq = seq
	t.e.states.put(t.st)
	return nil
}
