package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/runstate"
)

// errYield ends a turn: the run waits for a timer, a signal or another
// turn; the work message is done.
var errYield = errors.New("yield")

// errAside ends the part of a woken turn that is on the clock: its Bridge
// call answered. The rest (recording the answer, the next steps) waits in
// the later queue as an *asideError, so that the worker is free for the
// next due run at once, and every due run's workflow resumes on time
// before any of them finishes (see queues). Recording right away would
// hold a worker for the appends, slow under fsync: when a burst of wakes
// found every worker so held, its last runs resumed ~200ms late.
var errAside = errors.New("aside")

// asideError carries a turn that stepped aside, with the Bridge answer it
// still has to record; finishAside completes it.
type asideError struct{ t *turn }

func (a *asideError) Error() string { return "engine: turn stepped aside after its Bridge call" }

// errAsideBusy refuses a work message of a run whose turn stepped aside:
// it comes back after a pause, and that turn goes on meanwhile.
var errAsideBusy = errors.New("engine: the run's turn stepped aside")

// asides are the runs whose turn stepped aside and is not finished.
type asides struct {
	mu   sync.Mutex
	runs map[string]struct{}
}

func (a *asides) set(runID string, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !on {
		delete(a.runs, runID)
		return
	}
	if a.runs == nil {
		a.runs = map[string]struct{}{}
	}
	a.runs[runID] = struct{}{}
}

func (a *asides) has(runID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.runs[runID]
	return ok
}

func (e *Engine) handleRun(ctx context.Context, m jetstream.Msg) error {
	if l, ok := m.(laterMsg); ok {
		return e.finishAside(ctx, l.t)
	}
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
		return nil
	}
	if !due.IsZero() {
		// A timer fired lead early: hold it until its instant without
		// reading the run (the turn at the instant reads it).
		if d := due.Sub(e.now()); d > 0 && d <= 2*e.lead() {
			return &holdError{at: due}
		}
	}
	w, woke := m.(wokeMsg)
	unlock := e.states.lock(runID)
	defer unlock()
	if e.asides.has(runID) {
		return errAsideBusy
	}
	return e.advance(ctx, tenant, runID, woke, w.at)
}

// turn is one worker's hold on one run.
type turn struct {
	e      *Engine
	tenant string
	st     *runstate.State
	// woke: the turn woke from a timer and has not yet stepped aside.
	woke bool
	// out is the Bridge answer a turn that stepped aside still records.
	out *bridge.Outcome
	// due is the instant a woken turn's run came due (unix nanoseconds);
	// zero once the turn reached the Bridge, or when it did not wake.
	due int64
	// sub is the run's subscriber as the Bridge sees it, read once a turn.
	sub *bridge.Subscriber
	// resumed is a resume (a delay's end, a signal taken, a timeout) that
	// st already holds but the log does not yet: it is appended with the
	// turn's next write, after the Bridge call it leads to (see resume).
	resumed *eventlog.Record
}

// advance runs the run until it must wait, finishes, or has run
// StepsPerTurn steps (then it is re-enqueued). A turn that woke from a
// timer steps aside (an *asideError) after its first Bridge call; due is
// when a held run came due (zero: not held).
func (e *Engine) advance(ctx context.Context, tenant, runID string, woke bool, due int64) error {
	st := e.resumable(runID)
	if st == nil {
		var err error
		if st, err = e.load(ctx, tenant, runID); err != nil || st == nil {
			return err // nil state: no such run; the message is dropped
		}
	}
	t := &turn{e: e, tenant: tenant, st: st, woke: woke, due: due}
	return e.steps(ctx, t, t.step)
}

// finishAside completes a turn that stepped aside: it records the Bridge
// answer the turn holds and goes on with the run.
func (e *Engine) finishAside(ctx context.Context, t *turn) error {
	runID := t.st.RunID
	unlock := e.states.lock(runID)
	defer unlock()
	e.asides.set(runID, false)
	return e.steps(ctx, t, func(ctx context.Context) error {
		out := *t.out
		t.out = nil
		return t.answer(ctx, out)
	})
}

// steps runs first, then steps of the turn, up to StepsPerTurn in all, or
// fewer when the engine stops; then it enqueues the run's next turn.
func (e *Engine) steps(ctx context.Context, t *turn, first func(context.Context) error) error {
	runID := t.st.RunID
	next := first
	for range e.cfg.StepsPerTurn {
		err := next(ctx)
		next = t.step
		switch {
		case errors.Is(err, eventlog.ErrConflict):
			// Another writer (a signal, a cancel, another worker) moved
			// the run: re-read and decide again.
			t.resumed, t.out = nil, nil
			e.states.drop(runID)
			if t.st, err = e.load(ctx, t.tenant, runID); err != nil || t.st == nil {
				return err
			}
			continue
		case errors.Is(err, errYield):
			return nil
		case errors.Is(err, errAside):
			e.asides.set(runID, true)
			if e.cfg.SteppedAside != nil {
				e.cfg.SteppedAside()
			}
			return &asideError{t: t}
		case err != nil:
			return err
		}
		if e.stopping.Load() {
			break // the engine stops: another turn, maybe elsewhere, goes on
		}
	}
	if err := t.flush(ctx); err != nil {
		return err
	}
	return e.enqueue(ctx, t.st)
}

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
	if act := Decide(st, e.now()); act.Kind != ActResume || act.StepType == string(bridge.StepDigest) {
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

// record appends an event to the run expecting the state's last sequence
// and folds it into the state. A resume the turn holds is appended first.
func (t *turn) record(ctx context.Context, typ string, data any) error {
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

// resume completes the pending delay or wait in the turn's state only:
// the Bridge call it leads to goes first and the event is appended right
// after it (flush), so that a woken run's workflow resumes one append
// sooner. Nothing is lost by the order: until the append, the log still
// says the run is due, and a turn that ends before it (an error, a crash)
// leaves the run to resume again. The state is a copy until then, so the
// cache never holds what the log does not.
func (t *turn) resume(act Action) error {
	rec, raw, err := t.newRecord(events.StepCompleted, events.StepCompletedData{
		StepID: act.StepID, Type: act.StepType, Output: act.Output, SignalSeq: act.SignalSeq})
	if err != nil {
		return err
	}
	st := t.st.Clone()
	if err := st.Apply(eventlog.Event{Type: rec.Type, TenantID: t.tenant, At: rec.At, Data: raw, Subject: rec.Subject}); err != nil {
		return err
	}
	t.st, t.resumed = st, &rec
	return nil
}

// flush appends the resume the turn holds, if any.
func (t *turn) flush(ctx context.Context) error {
	rec := t.resumed
	if rec == nil {
		return nil
	}
	t.resumed = nil
	seq, err := t.e.log.Append(ctx, *rec)
	if err != nil {
		return err
	}
	t.st.LastSeq = seq
	t.e.states.put(t.st)
	return nil
}

// step decides and does one thing for the run.
func (t *turn) step(ctx context.Context) error {
	act := Decide(t.st, t.e.now())
	switch act.Kind {
	case ActNone:
		t.e.states.drop(t.st.RunID)
		return errYield
	case ActWait:
		if !act.At.IsZero() {
			if err := t.e.timer(ctx, t.st, act.At); err != nil {
				return err
			}
		}
		return errYield
	case ActResume:
		if act.StepType == string(bridge.StepDigest) {
			return t.closeDigest(ctx, act.StepID)
		}
		return t.resume(act)
	}
	return t.execute(ctx)
}

// execute calls the Bridge for the next step and records what it answered.
func (t *turn) execute(ctx context.Context) error {
	url, secret, err := t.e.binding(ctx, t.tenant, false)
	if errors.Is(err, apierr.ErrNotFound) {
		return t.fail(ctx, "", CodeBridgeNotConfigured, "no Bridge is registered for the tenant")
	}
	if err != nil {
		return err
	}
	payload, err := t.e.payload(ctx, t.tenant, t.st.TransactionID)
	if err != nil {
		return err
	}
	if t.sub == nil {
		t.sub = t.e.subscriber(t.tenant, t.st.SubscriberID)
	}
	if t.due != 0 {
		t.e.noteLate(t.due)
		t.due = 0
	}
	req := bridge.ExecuteRequest{WorkflowID: t.st.WorkflowID, RunID: t.st.RunID, Payload: payload, Subscriber: t.sub}
	for _, s := range t.st.CompletedSteps() {
		req.Steps = append(req.Steps, bridge.CompletedStep{StepID: s.StepID, Type: bridge.StepType(s.Type), Output: s.Output})
	}
	out, err := t.e.client.Execute(ctx, url, secret, req)
	if err != nil {
		return err
	}
	if out.Kind == bridge.OutcomeTerminal && out.Code == bridge.CodeBridgeUnauthorized {
		// The secret may have rotated since this process last looked:
		// refused with an old secret is not refused with the newest.
		if url2, secret2, err := t.e.binding(ctx, t.tenant, true); err == nil && (secret2 != secret || url2 != url) {
			if out, err = t.e.client.Execute(ctx, url2, secret2, req); err != nil {
				return err
			}
		}
	}
	if t.woke {
		t.woke, t.out = false, &out
		return errAside
	}
	return t.answer(ctx, out)
}

// answer records what the Bridge answered.
func (t *turn) answer(ctx context.Context, out bridge.Outcome) error {
	// The run's writes keep their order: the resume the call followed
	// goes before whatever the answer leads to (a delivery, a digest).
	if err := t.flush(ctx); err != nil {
		return err
	}
	switch out.Kind {
	case bridge.OutcomeCompleted:
		return t.record(ctx, events.RunCompleted, events.RunCompletedData{})
	case bridge.OutcomeTerminal:
		return t.fail(ctx, t.pendingID(out.StepID), out.Code, out.Message)
	case bridge.OutcomeRetryable:
		return t.retry(ctx, t.pendingID(out.StepID), "", out.Code, out.Message)
	}
	return t.stepAnswer(ctx, out.Step)
}

// pendingID names the step a failure belongs to: the Bridge's, else the
// step in progress.
func (t *turn) pendingID(id string) string {
	if id != "" {
		return id
	}
	if p := t.st.Pending(); p != nil {
		return p.StepID
	}
	return ""
}

// Bounds of one run, on top of each answer's (see bridge.MaxOutputBytes).
const (
	// MaxRunSteps bounds the steps of a run.
	MaxRunSteps = 1000
	// MaxRunOutputBytes bounds the recorded outputs of a run's steps
	// together: every execute request carries them all, and a Bridge
	// refuses a request over 10 MiB by default.
	MaxRunOutputBytes = 8 << 20
)

// runBounds reports whether recording s would take the run over one of
// its bounds.
func (t *turn) runBounds(s *bridge.Step) error {
	done := t.st.CompletedSteps()
	if len(done) >= MaxRunSteps {
		return fmt.Errorf("the run already has %d steps, the most a run may have", len(done))
	}
	total := len(s.Output)
	for _, st := range done {
		total += len(st.Output)
	}
	if total > MaxRunOutputBytes {
		return fmt.Errorf("the step would take the run's outputs to %d bytes, over %d", total, MaxRunOutputBytes)
	}
	return nil
}

// stepAnswer records a step the Bridge ran or describes.
func (t *turn) stepAnswer(ctx context.Context, s *bridge.Step) error {
	if err := t.runBounds(s); err != nil {
		return t.fail(ctx, s.StepID, bridge.CodeInvalidStep, err.Error())
	}
	now := t.e.now()
	switch s.Type {
	case bridge.StepRun:
		return t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: s.StepID, Type: string(s.Type), Output: s.Output})
	case bridge.StepSend:
		return t.send(ctx, s)
	case bridge.StepDelay:
		until := s.ResumeAt(now)
		if !until.After(now) {
			return t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: s.StepID, Type: string(s.Type), Output: jsonNull})
		}
		return t.record(ctx, events.RunSleeping, events.RunSleepingData{StepID: s.StepID, Until: until.UTC()})
	case bridge.StepWaitForEvent:
		d := events.RunWaitingData{StepID: s.StepID, Event: s.Event}
		if s.Timeout != nil {
			at := now.Add(s.Timeout.Duration()).UTC()
			d.TimeoutAt = &at
		}
		return t.record(ctx, events.RunWaiting, d)
	case bridge.StepDigest:
		return t.digest(ctx, s)
	}
	return t.fail(ctx, s.StepID, CodeUnsupportedStep, fmt.Sprintf("step type %q is not supported", s.Type))
}

// send hands a send step to delivery under the key <runId>:<stepId>.
func (t *turn) send(ctx context.Context, s *bridge.Step) error {
	to := t.st.SubscriberID
	if s.To != nil {
		to = s.To
	}
	if to == nil {
		return t.fail(ctx, s.StepID, CodeNoAddress, "the run has no subscriber and the send step names no `to`")
	}
	res, err := t.e.deliver.Deliver(ctx, t.tenant, delivery.Request{
		IdempotencyKey: t.st.RunID + ":" + s.StepID, RunID: t.st.RunID, StepID: s.StepID,
		SubscriberID: *to, Channel: s.Channel,
		Content: &delivery.Content{Subject: s.Content.Subject, Body: s.Content.Body}})
	if err != nil {
		if isCanceled(ctx, err) {
			return err
		}
		f := delivery.Classify(err)
		if f.Terminal {
			return t.fail(ctx, s.StepID, f.Code, f.Message)
		}
		return t.retry(ctx, s.StepID, string(s.Type), f.Code, f.Message)
	}
	out, err := json.Marshal(bridge.SendResult{AttemptID: res.AttemptID, Status: res.Status,
		ProviderMessageID: res.ProviderMessageID})
	if err != nil {
		return err
	}
	return t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: s.StepID, Type: string(s.Type), Output: out})
}

// fail ends the run with a terminal failure.
func (t *turn) fail(ctx context.Context, stepID, code, message string) error {
	if err := t.record(ctx, events.RunFailed, events.RunFailedData{StepID: stepID, Code: code, Message: message}); err != nil {
		return err
	}
	t.e.logger.Info("run failed", "tenant", t.tenant, "run", t.st.RunID, "step", stepID, "code", code)
	return errYield
}

// retry records a failed try and schedules the next, or fails the run
// once the step has used its attempts.
func (t *turn) retry(ctx context.Context, stepID, typ, code, message string) error {
	attempt := 1
	if p := t.st.Pending(); p != nil && (stepID == "" || p.StepID == "" || p.StepID == stepID) {
		attempt = p.Attempts + 1
	}
	if attempt >= t.e.cfg.MaxAttempts {
		return t.fail(ctx, stepID, CodeAttemptsExhausted,
			fmt.Sprintf("step %s failed %d times; last: %s: %s", stepID, attempt, code, message))
	}
	at := t.e.now().Add(backoff(t.e.cfg.RetryBase, attempt, randomJitter())).UTC()
	if err := t.record(ctx, events.StepFailed, events.StepFailedData{StepID: stepID, Type: typ, Attempt: attempt,
		Code: code, Message: message, RetryAt: at}); err != nil {
		return err
	}
	if err := t.e.timer(ctx, t.st, at); err != nil {
		return err
	}
	return errYield
}

// timer makes the run's next turn happen at at: now when at has come; by
// holding the current work message (a *holdError) when at is less than
// 2×lead away; otherwise by the run's one durable timer, armed lead before
// at (see hold.go).
func (e *Engine) timer(ctx context.Context, st *runstate.State, at time.Time) error {
	lead := e.lead()
	switch d := at.Sub(e.now()); {
	case d <= 0:
		return e.enqueue(ctx, st)
	case d <= 2*lead:
		return &holdError{at: at}
	}
	data, err := json.Marshal(wake{Tenant: st.TenantID, Run: st.RunID, At: at.UTC()})
	if err != nil {
		return err
	}
	return e.log.Schedule(ctx, eventlog.SchedSubject(st.TenantID, "run", st.RunID), eventlog.WorkWake, at.Add(-lead), data)
}

// enqueue asks for another turn of the run now.
func (e *Engine) enqueue(ctx context.Context, st *runstate.State) error {
	return e.log.Enqueue(ctx, eventlog.WorkRun(st.TenantID, st.RunID), nil, fmt.Sprintf("%s:%d", st.RunID, st.LastSeq))
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
func (e *Engine) subscriber(tenant string, id *string) *bridge.Subscriber {
	if id == nil {
		return nil
	}
	sub := &bridge.Subscriber{SubscriberID: *id}
	s, err := e.store.Subscriber(tenant, *id)
	if errors.Is(err, projections.ErrNotFound) || err != nil {
		return sub
	}
	sub.Contacts = s.Contacts
	if s.Locale != nil {
		sub.Locale = *s.Locale
	}
	if len(s.Attributes) > 0 {
		_ = json.Unmarshal(s.Attributes, &sub.Attributes)
	}
	return sub
}
