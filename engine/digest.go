package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/schedule"
)

// digestAttempts bounds the re-reads of a digest subject that other runs
// keep writing to.
const digestAttempts = 64

// Bounds of one digest window, so that its output stays well inside an
// event (the stream refuses events over 4 MiB). A run reaching the step
// while the open window is full opens the next window instead of joining.
const (
	// MaxDigestEvents bounds the events of a window, the opener's included.
	MaxDigestEvents = 1000
	// MaxDigestJoinedBytes bounds the payload bytes of the runs that join
	// a window (the opener's own payload, at most MaxPayloadBytes, comes
	// on top).
	MaxDigestJoinedBytes = 1 << 20
)

// digestKeep is how long after a window closes its joined payloads are
// kept in a folded digest; the window's run ids are kept for good.
const digestKeep = time.Hour

// window is one digest window folded from its subject.
type window struct {
	opened   events.DigestOpenedData
	openedAt time.Time
	joined   []joinedRun
	closed   bool
	closedAt time.Time
	// bytes is the payload bytes of joined.
	bytes int
	// pruned: the joined payloads are dropped (closed over digestKeep ago).
	pruned bool
}

type joinedRun struct {
	events.DigestJoinedData
	At time.Time
}

// full reports whether a run with a payload of n bytes cannot join w.
func (w *window) full(n int) bool {
	return 1+len(w.joined) >= MaxDigestEvents || w.bytes+n > MaxDigestJoinedBytes
}

// digestState folds a digest subject: its windows by id, which window
// each joined run joined, and the last sequence read.
type digestState struct {
	windows map[string]*window
	order   []string
	byRun   map[string]string
	last    uint64
	// prunedTo: the windows before order[prunedTo] are all pruned.
	prunedTo int
	// keep: prune nothing (a fold for a window whose payloads are needed).
	keep bool
}

func newDigestState() *digestState {
	return &digestState{windows: map[string]*window{}, byRun: map[string]string{}}
}

// digestBytes estimates the memory a folded digest holds.
func digestBytes(subject string, d *digestState) int64 {
	n := 256 + len(subject)
	for _, id := range d.order {
		w := d.windows[id]
		n += 160 + 2*len(id) + len(w.opened.StepID)
		for _, j := range w.joined {
			n += 96 + 2*len(j.RunID) + len(j.Payload)
		}
	}
	return int64(n)
}

// readDigest returns the digest subject folded up to its last event: the
// cached fold caught up with what was appended since, or a fold of the
// whole subject. The caller holds the subject's lock (see lockDigest).
func (e *Engine) readDigest(ctx context.Context, subject string) (*digestState, error) {
	return readFold(ctx, e, e.digests, subject, newDigestState)
}

// subjectFold is the state of a subject folded from its events: a digest
// window's, a throttle key's.
type subjectFold interface {
	// apply folds evs, the subject's events after lastSeq, in order.
	apply(evs []eventlog.Event) error
	// lastSeq is the sequence of the last event folded.
	lastSeq() uint64
}

// readFold returns the fold of subject up to its last event: the one
// cache holds caught up with what was appended since, or a fold of the
// whole subject from fresh(). A fold that fails leaves the cache without
// the subject. The caller holds the subject's lock.
func readFold[S subjectFold](ctx context.Context, e *Engine, cache *byteCache[S], subject string, fresh func() S) (S, error) {
	d, ok := cache.get(subject)
	if !ok {
		d = fresh()
	}
	evs, err := e.log.History(ctx, subject, d.lastSeq())
	if err != nil {
		var zero S
		return zero, err
	}
	if err := d.apply(evs); err != nil {
		cache.drop(subject)
		var zero S
		return zero, err
	}
	cache.put(subject, d)
	return d, nil
}

func (d *digestState) lastSeq() uint64 { return d.last }

// readDigestFull folds the whole digest subject, pruning nothing.
func (e *Engine) readDigestFull(ctx context.Context, subject string) (*digestState, error) {
	evs, err := e.log.History(ctx, subject, 0)
	if err != nil {
		return nil, err
	}
	d := newDigestState()
	d.keep = true
	return d, d.apply(evs)
}

// lockDigest serialises this process's writers of one digest subject (a
// run holding its own lock may take it; nothing holding it takes a run's).
func (e *Engine) lockDigest(subject string) func() { return e.states.lock("digest\x00" + subject) }

// writeDigest runs attempt, a read-decide-append on the digest subject,
// with the subject read afresh each time, again while it fails with
// eventlog.ErrConflict (another process wrote first), at most
// digestAttempts times. Errors reading the subject are returned as they
// are. The caller holds the subject's lock, and keeps it while it uses
// what attempt read.
func (e *Engine) writeDigest(ctx context.Context, subject string, attempt func(d *digestState) error) error {
	for range digestAttempts {
		d, err := e.readDigest(ctx, subject)
		if err != nil {
			return err
		}
		if err := attempt(d); !errors.Is(err, eventlog.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w: digest %s kept changing", eventlog.ErrConflict, subject)
}

// apply folds evs, oldest first, into d.
func (d *digestState) apply(evs []eventlog.Event) error {
	for _, ev := range evs {
		d.last = ev.Seq
		switch ev.Type {
		case events.DigestOpened:
			var o events.DigestOpenedData
			if err := ev.Decode(&o); err != nil {
				return err
			}
			d.prune(ev.At)
			d.windows[o.Window] = &window{opened: o, openedAt: ev.At}
			d.order = append(d.order, o.Window)
		case events.DigestJoined:
			var j events.DigestJoinedData
			if err := ev.Decode(&j); err != nil {
				return err
			}
			if w := d.windows[j.Window]; w != nil {
				w.joined = append(w.joined, joinedRun{j, ev.At})
				w.bytes += len(j.Payload)
				d.byRun[j.RunID] = j.Window
			}
		case events.DigestClosed:
			var c events.DigestClosedData
			if err := ev.Decode(&c); err != nil {
				return err
			}
			if w := d.windows[c.Window]; w != nil {
				w.closed, w.closedAt = true, ev.At
			}
		}
	}
	return nil
}

// prune drops the joined payloads of the windows closed over digestKeep
// before at (an event's time, so that every fold prunes alike).
func (d *digestState) prune(at time.Time) {
	if d.keep {
		return
	}
	for ; d.prunedTo < len(d.order); d.prunedTo++ {
		w := d.windows[d.order[d.prunedTo]]
		if !w.closed || at.Sub(w.closedAt) < digestKeep {
			return
		}
		for i := range w.joined {
			w.joined[i].Payload = nil
		}
		w.pruned = true
	}
}

// open returns the window a run arriving at now joins: the newest one
// neither closed nor past its end.
func (d *digestState) open(now time.Time) *window {
	for i := len(d.order) - 1; i >= 0; i-- {
		w := d.windows[d.order[i]]
		if !w.closed && now.Before(w.opened.ClosesAt) {
			return w
		}
	}
	return nil
}

// joinedBy returns the window runID joined, if any.
func (d *digestState) joinedBy(runID string) *window {
	if id, ok := d.byRun[runID]; ok {
		return d.windows[id]
	}
	return nil
}

// groupOf returns the subscriber and the key that a digest or throttle
// step s groups runs by, each empty when the run or the step has none.
func (t *turn) groupOf(s *wire.Step) (subscriber, key string) {
	if t.st.SubscriberID != nil {
		subscriber = *t.st.SubscriberID
	}
	if s.Key != nil {
		key = *s.Key
	}
	return subscriber, key
}

// digest handles a digest step: the run joins the open window of its
// (workflow, subscriber, key) and ends digested, or opens one and sleeps
// until it closes. Every write expects the digest subject's last sequence,
// so joins, opens and the close are ordered; a step replayed after a
// crash finds what it already wrote.
func (t *turn) digest(ctx context.Context, s *wire.Step) (verdict, error) {
	sub, key := t.groupOf(s)
	var sched schedule.Schedule
	if s.Cron != nil {
		var err error
		if sched, err = schedule.ParseIn(*s.Cron, t.location()); err != nil {
			return t.fail(ctx, s.StepID, apierr.CodeInvalidStep, fmt.Sprintf("invalid step from the bridge: digest step %q: cron: %v", s.StepID, err))
		}
		// A window that would never close (the 30th of February) is no
		// window: the step is refused rather than closed at once.
		if _, err := sched.NextWithin(t.e.now()); err != nil {
			return t.fail(ctx, s.StepID, apierr.CodeInvalidStep, fmt.Sprintf("invalid step from the bridge: digest step %q: cron: %v", s.StepID, err))
		}
	}
	id := events.DigestID(t.st.WorkflowID, sub, key)
	subject := eventlog.Subject(t.tenant, eventlog.AggDigest, id)
	payload, err := t.e.payload(ctx, t.tenant, t.st.TransactionID)
	if err != nil {
		return verdict{}, err
	}
	runID := t.st.RunID
	// What the run does once the subject holds its join or its window:
	// end digested into window joined, or sleep until closesAt.
	var joined string
	var closesAt time.Time
	unlock := t.e.lockDigest(subject)
	defer unlock()
	err = t.e.writeDigest(ctx, subject, func(d *digestState) error {
		if w := d.joinedBy(runID); w != nil {
			joined = w.opened.Window
			return nil
		}
		if w := d.windows[runID]; w != nil {
			joined, closesAt = "", w.opened.ClosesAt
			return nil
		}
		now := t.e.now()
		rec := eventlog.Record{Subject: subject, Tenant: t.tenant, Expect: true, ExpectSeq: d.last, At: now.UTC()}
		w := d.open(now)
		if w != nil && w.full(len(payload)) {
			w = nil // the next window opens
		}
		if w != nil {
			joined = w.opened.Window
			rec.Type, rec.Data = events.DigestJoined, events.DigestJoinedData{Window: joined, RunID: runID, Payload: payload}
		} else {
			joined, closesAt = "", closing(s, sched, now)
			rec.Type, rec.Data = events.DigestOpened, events.DigestOpenedData{Window: runID, StepID: s.StepID, ClosesAt: closesAt}
		}
		_, err := t.e.log.Append(ctx, rec)
		return err
	})
	if err != nil {
		return verdict{}, err
	}
	if joined != "" {
		return t.digested(ctx, s.StepID, joined)
	}
	return goOn, t.sleepDigest(ctx, s.StepID, id, closesAt)
}

// closing is when a window the step opens at now closes: after its
// window, or at its schedule's next instant.
func closing(s *wire.Step, sched schedule.Schedule, now time.Time) time.Time {
	if s.Cron == nil {
		return now.Add(s.Window.Duration()).UTC()
	}
	at, err := sched.Next(now)
	if err != nil {
		// An expression that never ticks again (a date in the past)
		// closes at once.
		return now.UTC()
	}
	return at.UTC()
}

// digested ends the run: it joined window, whose opener completes the
// step for every run of the window.
func (t *turn) digested(ctx context.Context, stepID, window string) (verdict, error) {
	if err := t.record(ctx, events.RunDigested, events.RunDigestedData{StepID: stepID, DigestRun: window}); err != nil {
		return verdict{}, err
	}
	return finished, nil
}

func (t *turn) sleepDigest(ctx context.Context, stepID, digestID string, until time.Time) error {
	return t.record(ctx, events.RunSleeping, events.RunSleepingData{StepID: stepID, Until: until, Type: string(wire.StepDigest), Digest: digestID})
}

// closeDigest ends the window the run opened, once it is due: it closes
// it (nothing joins after) and completes the step with every payload, the
// opener's first.
func (t *turn) closeDigest(ctx context.Context, stepID string) error {
	subject := eventlog.Subject(t.tenant, eventlog.AggDigest, t.st.Digest)
	runID := t.st.RunID
	var w *window
	unlock := t.e.lockDigest(subject)
	defer unlock()
	err := t.e.writeDigest(ctx, subject, func(d *digestState) error {
		w = d.windows[runID]
		if w != nil && w.pruned {
			// Closed long ago (the run's turn came back late): its
			// payloads are only in the log.
			full, err := t.e.readDigestFull(ctx, subject)
			if err != nil {
				return err
			}
			w = full.windows[runID]
		}
		if w == nil {
			return fmt.Errorf("engine: run %s sleeps on a digest window it never opened", runID)
		}
		if w.closed {
			return nil
		}
		_, err := t.e.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.DigestClosed, Tenant: t.tenant,
			Data: events.DigestClosedData{Window: runID}, Expect: true, ExpectSeq: d.last})
		return err
	})
	if err != nil {
		return err
	}
	payload, err := t.e.payload(ctx, t.tenant, t.st.TransactionID)
	if err != nil {
		return err
	}
	res := wire.DigestResult{Count: 1 + len(w.joined), Events: make([]wire.DigestEvent, 0, 1+len(w.joined))}
	add := func(runID string, p json.RawMessage, at time.Time) {
		var m map[string]any
		_ = json.Unmarshal(p, &m)
		res.Events = append(res.Events, wire.DigestEvent{Payload: m, RunID: runID, At: at.UTC()})
	}
	add(runID, payload, w.openedAt)
	for _, j := range w.joined {
		add(j.RunID, j.Payload, j.At)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: stepID, Type: string(wire.StepDigest), Output: out})
}
