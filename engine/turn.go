package engine

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// verdictKind is how a turn ended: what becomes of its work message.
type verdictKind uint8

// The kinds of verdict. A step returns goOn to let the turn take its next
// step; a turn never ends with it.
const (
	// verdictNext: not an end: the turn takes its next step.
	verdictNext verdictKind = iota
	// verdictDone: the work is over (the run finished or waits for a
	// signal or its durable timer, or the message was malformed or named
	// no run): acknowledge the message.
	verdictDone
	// verdictYield: the turn gave its worker up with the run able to go
	// on, after enqueueing the run's next turn: acknowledge the message.
	verdictYield
	// verdictAside: the woken turn stepped aside after its Bridge call;
	// the rest of it (recording the answer, the next steps) is the job
	// of turn, later (see scheduler). The run is marked in Engine.asides
	// until that job ends.
	verdictAside
	// verdictHold: the run is due again at at, within 2×lead: keep the
	// message in memory, unacknowledged, until then (see timers.go).
	verdictHold
	// verdictRetry: the turn could not start now (the run's turn stepped
	// aside and is not finished): give the message back to the server to
	// come again at at.
	verdictRetry
)

// verdict is how a turn ended; Engine.settle acts on it. A turn that
// fails returns an error instead: errors mean only failures.
type verdict struct {
	kind verdictKind
	// at is the instant of verdictHold and verdictRetry.
	at time.Time
	// turn is the turn of verdictAside.
	turn *turn
}

var (
	goOn     = verdict{kind: verdictNext}
	finished = verdict{kind: verdictDone}
	yielded  = verdict{kind: verdictYield}
)

func steppedAside(t *turn) verdict   { return verdict{kind: verdictAside, turn: t} }
func holdUntil(at time.Time) verdict { return verdict{kind: verdictHold, at: at} }
func retryAt(at time.Time) verdict   { return verdict{kind: verdictRetry, at: at} }

// asideRetry is how soon work of a run whose turn stepped aside comes
// back: that turn is queued behind due wakes only, so it is usually over
// by then.
const asideRetry = 200 * time.Millisecond

// turn is one worker's hold on one run.
type turn struct {
	e      *Engine
	tenant string
	st     *runstate.State
	// woke: the turn woke from a timer and has not yet stepped aside.
	woke bool
	// out is the Bridge answer a turn that stepped aside still records.
	out *bridgeclient.Outcome
	// due is the instant a woken turn's run came due (unix nanoseconds);
	// zero once the turn reached the Bridge, or when it did not wake.
	due int64
	// answered is the step the Bridge answered last in the turn, which
	// the turn acts on (see fail); nil before, or after an answer that
	// named no step.
	answered *wire.Step
	// sub is the run's subscriber as the Bridge sees it, read once a turn.
	sub *wire.Subscriber
	// resumed is a step's completion (a delay's end, a signal taken, a
	// timeout, a send's result) that st already holds but the log does
	// not yet: it is appended with the turn's next write, after the
	// Bridge call it leads to, or in the run's end (see hold). held is
	// its data.
	resumed *eventlog.Record
	held    *events.StepCompletedData
	// frozen is the run's subscriber frozen at its first turn, which st
	// already holds but the log does not yet: appended first by the
	// turn's next write (see subscriber).
	frozen *eventlog.Record
	// seen is the run's last sequence when the turn read it: every write
	// a send of the turn must see the effect of (a subscriber, channel or
	// preference change before the trigger or a signal) is at or before
	// it (see delivery.Request.Seen).
	seen uint64
}

// handleRun takes a turn of the run j names, or finishes the turn that
// stepped aside j carries.
func (e *Engine) handleRun(ctx context.Context, j job) (verdict, error) {
	if j.aside != nil {
		return e.finishAside(ctx, j.aside)
	}
	m := j.msg
	var tenant, runID string
	var due time.Time
	var err error
	if m.Subject() == eventlog.WorkWake {
		tenant, runID, due, err = parseWake(m.Data())
	} else {
		tenant, runID, err = parseWork(m.Subject(), eventlog.WorkRunPrefix)
	}
	if err != nil {
		e.logger.Error("dropping malformed work message", "subject", m.Subject(), "err", err)
		return finished, nil
	}
	if !due.IsZero() {
		// A timer fired lead early: hold it until its instant without
		// reading the run (the turn at the instant reads it).
		if planTimer(due, e.now(), e.lead()) == timerHold {
			return holdUntil(due), nil
		}
	}
	unlock := e.states.lock(runID)
	defer unlock()
	if e.asides.has(runID) {
		return retryAt(e.now().Add(asideRetry)), nil
	}
	return e.advance(ctx, tenant, runID, j.woke, j.due)
}

// advance runs the run until it must wait, finishes, or has run
// StepsPerTurn steps (then it is re-enqueued). A turn that woke from a
// timer steps aside after its first Bridge call; due is when a held run
// came due (zero: not held).
func (e *Engine) advance(ctx context.Context, tenant, runID string, woke bool, due int64) (verdict, error) {
	st := e.resumable(runID)
	if st == nil {
		var err error
		if st, err = e.load(ctx, tenant, runID); err != nil || st == nil {
			return finished, err // nil state: no such run; the message is dropped
		}
	}
	t := &turn{e: e, tenant: tenant, st: st, woke: woke, due: due, seen: st.LastSeq}
	return e.steps(ctx, t, t.step)
}

// steps runs first, then steps of the turn, up to StepsPerTurn in all, or
// fewer when the engine stops; then it enqueues the run's next turn and
// yields. The caller holds the run's lock.
func (e *Engine) steps(ctx context.Context, t *turn, first func(context.Context) (verdict, error)) (verdict, error) {
	runID := t.st.RunID
	next := first
	for range e.cfg.StepsPerTurn {
		v, err := next(ctx)
		next = t.step
		switch {
		case errors.Is(err, eventlog.ErrConflict):
			// Another writer (a signal, a cancel, another worker) moved
			// the run: re-read and decide again.
			t.resumed, t.held, t.frozen, t.sub, t.out, t.answered = nil, nil, nil, nil, nil, nil
			e.states.drop(runID)
			if t.st, err = e.load(ctx, t.tenant, runID); err != nil || t.st == nil {
				return finished, err
			}
			t.seen = t.st.LastSeq
			continue
		case err != nil:
			return verdict{}, err
		case v.kind == verdictAside:
			e.asides.set(runID, true)
			if e.cfg.SteppedAside != nil {
				e.cfg.SteppedAside()
			}
			return v, nil
		case v.kind != verdictNext:
			return v, nil
		}
		if e.stopping.Load() {
			break // the engine stops: another turn, maybe elsewhere, goes on
		}
	}
	if err := t.flush(ctx); err != nil {
		return verdict{}, err
	}
	return yielded, e.enqueue(ctx, t.st)
}

// step decides and does one thing for the run.
func (t *turn) step(ctx context.Context) (verdict, error) {
	act := Decide(t.st, t.e.now())
	switch act.Kind {
	case ActNone:
		if err := t.flush(ctx); err != nil {
			return verdict{}, err
		}
		t.e.states.drop(t.st.RunID)
		return finished, nil
	case ActWait:
		if err := t.flush(ctx); err != nil {
			return verdict{}, err
		}
		if act.At.IsZero() {
			return finished, nil
		}
		return t.e.timer(ctx, t.st, act.At)
	case ActResume:
		if act.StepType == string(wire.StepDigest) {
			return goOn, t.closeDigest(ctx, act.StepID)
		}
		return goOn, t.resume(ctx, act)
	}
	if v, ended, err := t.endIfCancelled(ctx); ended || err != nil {
		return v, err
	}
	return t.execute(ctx)
}

// endIfCancelled cancels the run when its transaction was cancelled (the
// projections hold the TransactionCancelled), before a Bridge call or a
// send: a broadcast's cancel answers once it is recorded, and from then
// on no turn of its runs, in any process, calls the Bridge or sends (a
// call or a send under way finishes). The cancel's sweep ends the runs
// that take no turn (asleep, waiting).
func (t *turn) endIfCancelled(ctx context.Context) (verdict, bool, error) {
	if t.st.TransactionID == "" {
		return verdict{}, false, nil
	}
	actor, cancelled, err := t.e.store.TransactionCancelled(t.tenant, t.st.TransactionID)
	if err != nil || !cancelled {
		return verdict{}, false, nil // unread: the sweep ends the run
	}
	if err := t.record(ctx, events.RunCancelled, events.RunCancelledData{Reason: events.CancelTransaction, Actor: actor}); err != nil {
		return verdict{}, true, err
	}
	t.e.states.drop(t.st.RunID)
	return finished, true, nil
}
