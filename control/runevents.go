package control

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// MaxRunEvents bounds the events RunEvents reads of one run: a run's steps
// are bounded (engine's step limit), its signals and retried attempts are
// not, and one request must not read without end.
const MaxRunEvents = 5000

// RunEvents returns the events of a run in log order: its transaction's
// TriggerAccepted (the payload, when it was not erased) and every event
// of the run's own subject, at most MaxRunEvents. The deliveries of its
// sends are read apart (GET /v1/deliveries?runId=). Errors:
// apierr.ErrNotFound (run_not_found).
func (c *Control) RunEvents(ctx context.Context, tenant, runID string) (evs []eventlog.Event, truncated bool, err error) {
	if !ValidRunID(runID) {
		return nil, false, errRunNotFound("")
	}
	st, err := c.store.RunState(tenant, runID)
	if err != nil {
		if errors.Is(err, projections.ErrNotFound) {
			return nil, false, errRunNotFound(runID)
		}
		return nil, false, err
	}
	own, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		return nil, false, err
	}
	if len(own) > MaxRunEvents {
		own, truncated = own[:MaxRunEvents], true
	}
	if st.TransactionID != "" {
		txn, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, st.TransactionID), 0)
		if err != nil {
			return nil, false, err
		}
		for _, ev := range txn {
			if ev.Type == events.TriggerAccepted {
				evs = append(evs, ev)
				break
			}
		}
	}
	evs = append(evs, own...)
	slices.SortFunc(evs, func(a, b eventlog.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return evs, truncated, nil
}
