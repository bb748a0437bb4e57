package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// A trigger to one subscriber (to.subscriberId) is not fanned out: it
// writes three records, each before the next is sent, and no bookkeeping
// of its own:
//
//  1. Arm: the run's first work message, work.run.<tenant>.<run>, on WORK,
//     with the transaction id as its data and a msg id of its own;
//  2. control: the transaction's TriggerAccepted, its subject expected
//     empty (the gate of a repeated transactionId), under the context Arm
//     returned;
//  3. FanOut: the run's RunStarted, its subject expected empty (a run
//     starts once), with the msg id <run>:started.
//
// The trigger is answered after 3. The projections derive the ingress row
// from these events: TriggerAccepted writes it received, RunStarted moves
// it to dispatched with the run id and completes the transaction (count
// 1). No backstop is armed and no NotificationsReceived,
// NotificationsDispatched or FanoutCompleted is written: the run's own
// work message, stored before the trigger is accepted, is what finishes
// the trigger when the process that took it dies. The process at the
// trigger parks the message when it comes before the trigger is done
// (see admit); the worker that takes a work message carrying a
// transaction id makes sure the run was started first, and starts it
// from the TriggerAccepted when it was not (see awaitStart).
//
// Where a crash leaves a single-subscriber trigger (the process dies after
// the write named, before the next):
//
//	after   on the log                        the client   who finishes it
//	-----   -------------------------------   ----------   ---------------------------------------
//	(none)  nothing                           no answer    nothing to finish
//	1       the work message                  no answer    its worker finds no TriggerAccepted: it
//	                                                       asks again while the message is younger
//	                                                       than AckWait, then drops it
//	2       + TriggerAccepted (row received)  no answer    the work message's worker (at once, or
//	                                                       after AckWait when the dead process
//	                                                       held it) writes RunStarted from the
//	                                                       TriggerAccepted, then takes the turn
//	3       + RunStarted (row dispatched)     no answer    the work message's worker takes the
//	        (transaction completed)           or 202       turn (after AckWait when it was held)
//
// A repeated transactionId goes through the same three writes: its work
// message is one more (never de-duplicated away: the first may have been
// dropped with its trigger never accepted; a duplicate work message costs
// a turn, as any other), the TriggerAccepted conflicts and the request is compared (409
// transaction_mismatch), the RunStarted conflicts or starts the run a
// crash left unstarted: the answer is the first trigger's run. A worker
// that finds the transaction accepted with another request (another
// subscriber) drops the work message: its run is none of the
// transaction's.
//
// The accepting write must be made within AckWait/3 of Arm (the context
// Arm returns ends then): a worker drops a work message whose trigger is
// not accepted AckWait after the message was stored, and a
// TriggerAccepted written after that would leave its run unfinished.

// armedStart is how long a trigger may take to be accepted after Arm, as a
// fraction of AckWait: a worker waits a full AckWait for it (see
// awaitStart).
const armedStart = 3

// startRetryMin is the least pause before a worker looks again for the
// acceptance of a trigger whose work message came first.
const startRetryMin = 20 * time.Millisecond

// Arm prepares an accepted trigger's completion by this runtime before the
// trigger is accepted: for one subscriber it stores the run's first work
// message (see the table above); a broadcast's backstop (see Broadcast)
// is armed here, any other topic trigger's by FanOut. The TriggerAccepted must be appended under the returned context.
// release, to be called once the trigger is answered or refused, hands
// the work message on to a worker if it came meanwhile (see admit).
func (e *Engine) Arm(ctx context.Context, tenant string, acc events.TriggerAcceptedData) (context.Context, func(), error) {
	if acc.To.SubscriberID == nil {
		if acc.Recipients != nil {
			// A broadcast is answered before its fan-out: the backstop is
			// stored before the trigger is accepted, so a crash after the
			// acceptance leaves it to a fan-out worker (see Broadcast).
			if err := e.armBackstop(ctx, tenant, acc.TransactionID); err != nil {
				return nil, nil, err
			}
		}
		return ctx, func() {}, nil
	}
	runID := RunID(tenant, acc.TransactionID, *acc.To.SubscriberID)
	ctx, cancel := context.WithTimeout(ctx, e.cfg.AckWait/armedStart)
	done := e.starts.add(runID)
	release := func() { cancel(); e.starts.done(runID, done) }
	// A msg id of its own: a publish retried after a lost acknowledgement
	// stores it once, and a repeat of the trigger after a crash stores
	// its own (the first may have been dropped, see awaitStart).
	msgID := eventlog.NewID(runID + ":arm:")
	if err := e.log.Enqueue(ctx, eventlog.WorkRun(tenant, runID), []byte(acc.TransactionID), msgID); err != nil {
		release()
		return nil, nil, err
	}
	return ctx, release, nil
}

// startSingle starts the run of an accepted trigger to one subscriber (its
// work message is stored: see Arm) and returns its dispatch. It primes the
// state and payload caches, so the run's first turn reads nothing.
func (e *Engine) startSingle(ctx context.Context, tenant string, acc events.TriggerAcceptedData) (events.Dispatch, error) {
	runID := RunID(tenant, acc.TransactionID, *acc.To.SubscriberID)
	rec := startRecord(tenant, acc, runID, e.now())
	seq, err := e.log.Append(ctx, rec)
	switch {
	case errors.Is(err, eventlog.ErrConflict):
		// Started already: by an earlier attempt at this trigger, or by
		// its work message's worker.
	case err != nil:
		return events.Dispatch{}, err
	default:
		e.prime(rec, seq)
		e.payloads.put(tenant+"\x00"+acc.TransactionID, acc.Payload)
	}
	return events.Dispatch{SubscriberID: *acc.To.SubscriberID, RunID: runID, Status: events.NotificationDispatched}, nil
}

// startRecord is the RunStarted of an accepted trigger's run.
func startRecord(tenant string, acc events.TriggerAcceptedData, runID string, at time.Time) eventlog.Record {
	return eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunStarted,
		Tenant: tenant, MsgID: runID + ":started", Expect: true, At: at.UTC(),
		Data: events.RunStartedData{RunID: runID, TransactionID: acc.TransactionID, WorkflowID: acc.WorkflowID,
			SubscriberID: acc.To.SubscriberID}}
}

// admit is the intake of the runs consumer around add: a run's first
// work message stored by Arm comes at once, usually while its trigger in
// this process is still at its writes. Such a message is parked until the
// trigger is released, then handed to add, so that no worker (and none of
// the tenant's turns at once) waits for a trigger; any other message goes
// to add at once. A parked message is unacknowledged: a crash meanwhile
// leaves it to be redelivered after AckWait.
func (e *Engine) admit(add func(jetstream.Msg)) func(jetstream.Msg) {
	return func(m jetstream.Msg) {
		if len(m.Data()) > 0 {
			if _, runID, err := parseWork(m.Subject(), eventlog.WorkRunPrefix); err == nil && e.starts.park(runID, func() { add(m) }) {
				return
			}
		}
		add(m)
	}
}

// handleRunWork takes a job of the runs consumer: a run's first work
// message stored by Arm (its data is the transaction id) may come before
// its run is started, so the run's start is made sure of first (see
// awaitStart); then the run takes its turn.
func (e *Engine) handleRunWork(ctx context.Context, j job) (verdict, error) {
	if j.aside == nil && len(j.msg.Data()) > 0 {
		if v, ok, err := e.awaitStart(ctx, j.msg); err != nil || !ok {
			return v, err
		}
	}
	return e.handleRun(ctx, j)
}

// awaitStart makes sure the run m names is started before its turn; ok
// is false when the turn must not be taken now, and v then says what
// becomes of m:
//
//   - the run started (cached here, or on the log): ok;
//   - the transaction accepted for this run's subscriber, the run not
//     started (a crash, or the trigger between its writes in another
//     process): start it, ok; when another writer's start conflicts
//     (stored, or in flight and not yet read on a replicated stream),
//     ask again soon: the turn must read the run it is given;
//   - the transaction accepted with another request: drop m;
//   - the transaction not accepted: ask again later while m is younger
//     than AckWait (its trigger may be at its writes in another process),
//     then drop m (the trigger was never accepted: nothing to finish).
func (e *Engine) awaitStart(ctx context.Context, m jetstream.Msg) (v verdict, ok bool, err error) {
	tenant, runID, err := parseWork(m.Subject(), eventlog.WorkRunPrefix)
	if err != nil {
		return verdict{}, true, nil // handleRun drops it
	}
	txn := string(m.Data())
	if e.states.get(runID) != nil {
		return verdict{}, true, nil
	}
	if last, err := e.log.SubjectLastSeq(ctx, eventlog.Subject(tenant, eventlog.AggRun, runID)); err != nil || last > 0 {
		return verdict{}, err == nil, err
	}
	first, accepted, err := e.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn))
	if err != nil {
		return verdict{}, false, err
	}
	if accepted && first.Type == events.TriggerAccepted {
		var acc events.TriggerAcceptedData
		if err := first.Decode(&acc); err != nil {
			return verdict{}, false, err
		}
		if acc.To.SubscriberID == nil || RunID(tenant, acc.TransactionID, *acc.To.SubscriberID) != runID {
			e.logger.Info("dropping the work of a run its transaction does not start",
				"tenant", tenant, "transaction", txn, "run", runID)
			return finished, false, nil
		}
		rec := startRecord(tenant, acc, runID, e.now())
		seq, err := e.log.Append(ctx, rec)
		if errors.Is(err, eventlog.ErrConflict) {
			// Another writer's start (the trigger's own, at its last write
			// in another process) is stored, or still in flight on a
			// replicated stream, where it is not read yet: look again
			// once it is.
			return retryAt(e.now().Add(startRetryMin)), false, nil
		}
		if err != nil {
			return verdict{}, false, err
		}
		e.prime(rec, seq)
		e.payloads.put(tenant+"\x00"+acc.TransactionID, acc.Payload)
		e.logger.Info("started the run of an interrupted trigger", "tenant", tenant, "transaction", txn, "run", runID)
		return verdict{}, true, nil
	}
	age := e.cfg.AckWait
	if meta, err := m.Metadata(); err == nil {
		age = time.Since(meta.Timestamp)
	}
	if age < e.cfg.AckWait {
		return retryAt(e.now().Add(min(max(age, startRetryMin), e.cfg.AckWait/armedStart))), false, nil
	}
	e.logger.Info("dropping the work of a trigger never accepted", "tenant", tenant, "transaction", txn, "run", runID)
	return finished, false, nil
}

// starts are the runs whose trigger this process is at (between Arm and
// release), with the work messages parked until then (see admit). Safe
// for concurrent use.
type starts struct {
	mu sync.Mutex
	m  map[string]*startWait
}

// startWait is one run's pending start: the triggers at it (a repeat may
// overlap) and the work parked until the last is released.
type startWait struct {
	n      int
	parked []func()
}

// add records a trigger at the run's start and returns its entry.
func (s *starts) add(runID string) *startWait {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*startWait{}
	}
	w := s.m[runID]
	if w == nil {
		w = &startWait{}
		s.m[runID] = w
	}
	w.n++
	return w
}

// done releases one trigger of w; the last one hands the parked work on,
// each in a goroutine of its own (handing on blocks until a worker takes
// it).
func (s *starts) done(runID string, w *startWait) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.n--; w.n > 0 {
		return
	}
	delete(s.m, runID)
	for _, resume := range w.parked {
		go resume()
	}
}

// park keeps resume until the triggers at the run's start are released,
// and reports whether there are any; without, it keeps nothing.
func (s *starts) park(runID string, resume func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.m[runID]
	if w == nil {
		return false
	}
	w.parked = append(w.parked, resume)
	return true
}
