package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// The throttle step counts runs on one subject of the event log per
// (tenant, workflow, subscriber, key): each run reaching a throttle step
// appends one ThrottleCounted, conditional on the subject's last sequence,
// carrying the count it computed from the runs before it. So the count is
// the log's, not a process's: every process appends to the same subject,
// a conflict makes the loser re-read and count again, and a run (a step of
// it) is counted once: a step asked again (a crash before its result was
// recorded, a conflict on the run) finds its own entry and answers the
// count recorded there. docs/architecture.md says why a subject and not a
// KV bucket with a TTL.

// throttleAttempts bounds the re-reads of a throttle subject that other
// runs keep writing to.
const throttleAttempts = 64

// throttleState folds a throttle subject: the times of the entries that
// may still fall in a window, oldest first, the count of every (run, step)
// counted, and the last sequence read. The counts are kept for good, not
// pruned with the times: a step may come back to its count long after its
// window (a run rerun days later), and a fold is either whole or, evicted
// from the cache, read again whole.
type throttleState struct {
	entries []time.Time
	byStep  map[string]int
	last    uint64
	// horizon is the longest window a step of this subject asked for:
	// entry times older than it are pruned.
	horizon time.Duration
	// pruned: some entry time was dropped; a longer window than horizon
	// needs the subject read again.
	pruned bool
}

func newThrottleState() *throttleState { return &throttleState{byStep: map[string]int{}} }

// throttleBytes estimates the memory a folded throttle subject holds.
func throttleBytes(subject string, d *throttleState) int64 {
	n := 256 + len(subject) + 24*len(d.entries)
	for k := range d.byStep {
		n += 64 + len(k)
	}
	return int64(n)
}

// throttleStep is the byStep key of one step of one run.
func throttleStep(runID, stepID string) string { return runID + "\x00" + stepID }

// apply folds evs, oldest first, into d.
func (d *throttleState) apply(evs []eventlog.Event) error {
	for _, ev := range evs {
		d.last = ev.Seq
		if ev.Type != events.ThrottleCounted {
			continue
		}
		var c events.ThrottleCountedData
		if err := ev.Decode(&c); err != nil {
			return err
		}
		d.entries = append(d.entries, ev.At)
		d.byStep[throttleStep(c.RunID, c.StepID)] = c.Count
	}
	return nil
}

// within returns the entries later than now - window.
func (d *throttleState) within(now time.Time, window time.Duration) int {
	from := now.Add(-window)
	n := 0
	for i := len(d.entries) - 1; i >= 0 && d.entries[i].After(from); i-- {
		n++
	}
	return n
}

// prune drops the entries no window of the subject reaches at now.
// Entries are in log order, which is time order but for the clocks of
// processes: one a little out of order is dropped a little late.
func (d *throttleState) prune(now time.Time) {
	from := now.Add(-d.horizon)
	i := 0
	for i < len(d.entries) && !d.entries[i].After(from) {
		i++
	}
	if i == 0 {
		return
	}
	d.entries = append(d.entries[:0:0], d.entries[i:]...)
	d.pruned = true
}

// readThrottle returns the throttle subject folded up to its last event:
// the cached fold caught up with what was appended since, or a fold of
// the whole subject. The caller holds the subject's lock.
func (e *Engine) readThrottle(ctx context.Context, subject string) (*throttleState, error) {
	return readFold(ctx, e, e.throttles, subject, newThrottleState)
}

func (d *throttleState) lastSeq() uint64 { return d.last }

// throttle handles a throttle step: the run is counted on its (workflow,
// subscriber, key) subject, once, and the step completes with the count.
func (t *turn) throttle(ctx context.Context, s *wire.Step) (verdict, error) {
	sub, key := t.groupOf(s)
	subject := eventlog.Subject(t.tenant, eventlog.AggThrottle, events.ThrottleID(t.st.WorkflowID, sub, key))
	count, err := t.e.countThrottle(ctx, t.tenant, subject, t.st.RunID, s.StepID, s.Window.Duration())
	if err != nil {
		return verdict{}, err
	}
	out, err := json.Marshal(wire.ThrottleResult{Throttled: int64(count) > *s.Limit, Count: count})
	if err != nil {
		return verdict{}, err
	}
	return goOn, t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: s.StepID, Type: string(wire.StepThrottle), Output: out})
}

// countThrottle counts step stepID of run runID on the throttle subject,
// once, and returns its count: the runs counted there within window
// before it, plus one. A step counted already returns the count recorded
// then. The first try appends on the cached fold without reading the
// subject: the append's condition is the proof the fold is whole, and a
// conflict reads what it missed.
func (e *Engine) countThrottle(ctx context.Context, tenant, subject, runID, stepID string, window time.Duration) (int, error) {
	step := throttleStep(runID, stepID)
	unlock := e.states.lock("throttle\x00" + subject)
	defer unlock()
	d, cached := e.throttles.get(subject)
	for range throttleAttempts {
		if !cached {
			var err error
			if d, err = e.readThrottle(ctx, subject); err != nil {
				return 0, err
			}
		}
		cached = false
		if d.pruned && window > d.horizon {
			// The fold dropped entries this longer window reaches.
			e.throttles.drop(subject)
			var err error
			if d, err = e.readThrottle(ctx, subject); err != nil {
				return 0, err
			}
		}
		if c, ok := d.byStep[step]; ok {
			return c, nil
		}
		now := e.now()
		d.horizon = max(d.horizon, window)
		d.prune(now)
		n := 1 + d.within(now, window)
		rec := eventlog.Record{Subject: subject, Type: events.ThrottleCounted, Tenant: tenant, At: now.UTC(),
			Data: events.ThrottleCountedData{RunID: runID, StepID: stepID, Count: n}, Expect: true, ExpectSeq: d.last}
		seq, err := e.log.Append(ctx, rec)
		if errors.Is(err, eventlog.ErrConflict) {
			continue
		}
		if err != nil {
			e.throttles.drop(subject) // the append's fate is unknown: read it next time
			return 0, err
		}
		d.last = seq
		d.entries = append(d.entries, now.UTC())
		d.byStep[step] = n
		e.throttles.put(subject, d)
		return n, nil
	}
	return 0, fmt.Errorf("%w: throttle %s kept changing", eventlog.ErrConflict, subject)
}
