package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/runstate"
)

// resumable returns the cached state of a run whose next action is to
// record a resume (a delay's end, a signal taken, a timeout): that append
// expects the state's last sequence, so a state made stale by another
// writer only costs a conflict and a re-read, and the usual check of the
// subject's last sequence can be skipped. Digest windows are excluded:
// closing one writes to the digest first. Nil: load the state.
func (e *Engine) resumable(runID string) *runstate.State {
	st := e.states.get(runID)
	if st == nil {
		return nil
	}
	if act := Decide(st, e.now()); act.Kind != ActResume || act.StepType == string(wire.StepDigest) {
		return nil
	}
	return st
}

// load returns the run's folded state, from the cache when it is as new
// as the run's subject, else from the log. Nil: the run does not exist.
func (e *Engine) load(ctx context.Context, tenant, runID string) (*runstate.State, error) {
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	last, err := e.log.SubjectLastSeq(ctx, subject)
	if err != nil || last == 0 {
		return nil, err
	}
	st := e.states.get(runID)
	if st != nil && st.LastSeq == last {
		return st, nil
	}
	var after uint64
	if st == nil || st.LastSeq > last {
		st = &runstate.State{}
	} else {
		after = st.LastSeq
	}
	evs, err := e.log.History(ctx, subject, after)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if err := st.Apply(ev); err != nil {
			return nil, err
		}
	}
	if st.RunID == "" {
		return nil, nil
	}
	e.states.put(st)
	return st, nil
}

// payload returns a transaction's trigger payload, read once from its
// TriggerAccepted.
func (e *Engine) payload(ctx context.Context, tenant, txn string) (json.RawMessage, error) {
	k := tenant + "\x00" + txn
	if p, ok := e.payloads.get(k); ok {
		return p, nil
	}
	ev, ok, err := e.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn))
	if err != nil {
		return nil, err
	}
	var d events.TriggerAcceptedData
	if ok {
		if err := ev.Decode(&d); err != nil {
			return nil, err
		}
	}
	if len(d.Payload) == 0 {
		d.Payload = json.RawMessage("{}")
	}
	e.payloads.put(k, d.Payload)
	return d.Payload, nil
}

// subscriber is the run's recipient as the Bridge sees it: the stored
// subscriber, or just its id when it is unknown; nil for a cron run.
func (e *Engine) subscriber(tenant string, id *string) *wire.Subscriber {
	if id == nil {
		return nil
	}
	sub := &wire.Subscriber{SubscriberID: *id}
	s, err := e.store.Subscriber(tenant, *id)
	if errors.Is(err, projections.ErrNotFound) || err != nil {
		return sub
	}
	sub.Contacts = s.Contacts
	if s.Locale != nil {
		sub.Locale = *s.Locale
	}
	if s.Timezone != nil {
		sub.Timezone = *s.Timezone
	}
	if len(s.Attributes) > 0 {
		_ = json.Unmarshal(s.Attributes, &sub.Attributes)
	}
	return sub
}
