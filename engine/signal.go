package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/eventlog"
)

// Wake has a run take a turn after the event at seq was appended to it
// (a signal): the work message's id names the event, so waking twice for
// one event queues one turn.
func (e *Engine) Wake(ctx context.Context, tenant, runID string, seq uint64) error {
	return e.log.Enqueue(ctx, eventlog.WorkRun(tenant, runID), nil, fmt.Sprintf("%s:%d", runID, seq))
}

// Cancelled forgets a cancelled run: its cached state and its pending
// timer. It returns once a turn of the run under way in this process
// (begun before the cancel was recorded, maybe at a send), and one that
// stepped aside with a Bridge answer still to act on, has ended: its next
// write finds the run cancelled, so nothing of the run is sent after
// Cancelled returns. A turn in another process is not waited for.
func (e *Engine) Cancelled(ctx context.Context, tenant, runID string) error {
	for {
		turned := make(chan struct{})
		go func() {
			e.states.lock(runID)()
			close(turned)
		}()
		select {
		case <-turned:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !e.asides.has(runID) {
			break
		}
		// The turn that stepped aside is finished from the scheduler's
		// later queue, behind due wakes only: look again shortly.
		select {
		case <-time.After(asideRetry / 10):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e.states.drop(runID)
	return e.log.Cancel(ctx, eventlog.SchedSubject(tenant, "run", runID))
}
