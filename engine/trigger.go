package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// DefaultFanoutChunk is Config.FanoutChunk's default.
const DefaultFanoutChunk = 1000

// RunID derives the id of the run of one subscriber in one transaction:
// a fan-out resumed after a crash finds the same ids and starts nothing
// twice.
func RunID(tenant, txn, subscriberID string) string {
	h := sha256.Sum256([]byte(tenant + "\x00" + txn + "\x00" + subscriberID))
	return "run_" + hex.EncodeToString(h[:12])
}

// FanOut starts the runs of an accepted trigger that are not started yet
// and returns the dispatch of every recipient, in the order they were
// resolved. A trigger to one subscriber starts its run (see Arm); a topic
// trigger arms a backstop first: if this process dies mid fan-out, a
// fan-out worker finishes it once the backstop fires. Safe to repeat and
// to run concurrently (see fanout).
func (e *Engine) FanOut(ctx context.Context, tenant string, acc events.TriggerAcceptedData) ([]events.Dispatch, error) {
	if acc.To.SubscriberID != nil {
		d, err := e.startSingle(ctx, tenant, acc)
		if err != nil {
			return nil, err
		}
		return []events.Dispatch{d}, nil
	}
	if err := e.armBackstop(ctx, tenant, acc.TransactionID); err != nil {
		return nil, err
	}
	res, err := e.fanout(ctx, tenant, acc)
	if err != nil {
		return nil, err
	}
	if err := e.log.Cancel(ctx, eventlog.SchedSubject(tenant, "fanout", acc.TransactionID)); err != nil {
		e.logger.Warn("could not cancel a fan-out backstop; it will find the fan-out done", "err", err)
	}
	return res, nil
}

// armBackstop schedules a transaction's fan-out backstop FanoutBackstop
// from now: unless a process working on the fan-out keeps it ahead (see
// keepBackstop) or cancels it once done, a fan-out worker of any process
// takes the fan-out over then.
func (e *Engine) armBackstop(ctx context.Context, tenant, txn string) error {
	return e.log.Schedule(ctx, eventlog.SchedSubject(tenant, "fanout", txn), eventlog.WorkFanout(tenant, txn),
		e.now().Add(e.cfg.FanoutBackstop), nil)
}

// Broadcast hands an accepted broadcast's fan-out to the fan-out workers
// of every process: one work.fanout message, taken by whichever process
// is free; the runs it starts are worked by every process. Its backstop,
// armed by Arm before the acceptance, finishes the fan-out should this
// message be lost with its process, and while a worker fans out it keeps
// the backstop ahead, so one process at a time works on a fan-out. The
// trigger is answered once Broadcast returns; repeating it is harmless
// (one message per transaction inside the de-duplication window, and a
// fan-out finds the runs already started).
func (e *Engine) Broadcast(ctx context.Context, tenant string, acc events.TriggerAcceptedData) error {
	return e.log.Enqueue(ctx, eventlog.WorkFanout(tenant, acc.TransactionID), nil,
		tenant+":"+acc.TransactionID+":broadcast")
}

// handleFanout fans out a broadcast (see Broadcast), or finishes a
// fan-out whose trigger did not (a crash).
func (e *Engine) handleFanout(ctx context.Context, m jetstream.Msg) error {
	tenant, txn, err := parseWork(m.Subject(), eventlog.WorkFanoutPrefix)
	if err != nil {
		e.logger.Error("dropping malformed work message", "subject", m.Subject(), "err", err)
		return nil
	}
	first, ok, err := e.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn))
	if err != nil || !ok {
		return err
	}
	var acc events.TriggerAcceptedData
	if err := first.Decode(&acc); err != nil {
		return err
	}
	if acc.Recipients != nil {
		err = e.broadcast(ctx, tenant, acc)
	} else {
		_, err = e.fanout(ctx, tenant, acc)
	}
	if err != nil {
		return err
	}
	if acc.Recipients == nil {
		e.logger.Info("finished an interrupted fan-out", "tenant", tenant, "transaction", txn)
	}
	// The fan-out is done: the backstop that fanout kept ahead has nothing
	// left to take over.
	if err := e.log.Cancel(ctx, eventlog.SchedSubject(tenant, "fanout", txn)); err != nil {
		e.logger.Warn("could not cancel a fan-out backstop; it will find the fan-out done", "err", err)
	}
	return nil
}

// fanout starts the runs of a transaction that are not started yet, in
// chunks: the ingress rows of a chunk are written (received) before its
// runs are submitted, then moved to dispatched or failed. It is safe to
// run again and concurrently: run ids are derived, a run's start expects
// an empty subject, and rows keep their first state.
func (e *Engine) fanout(ctx context.Context, tenant string, acc events.TriggerAcceptedData) ([]events.Dispatch, error) {
	defer e.keepBackstop(ctx, tenant, acc.TransactionID)()
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	history, err := e.log.History(ctx, subject, 0)
	if err != nil {
		return nil, err
	}
	watch, err := watchTxn(history)
	if err != nil {
		return nil, err
	}
	done := map[string]events.Dispatch{}
	var completed bool
	for _, ev := range history {
		switch ev.Type {
		case events.NotificationsDispatched:
			var d events.NotificationsDispatchedData
			if err := ev.Decode(&d); err != nil {
				return nil, err
			}
			for _, r := range d.Runs {
				done[r.SubscriberID] = r
			}
		case events.FanoutCompleted:
			completed = true
		}
	}
	var recipients []string
	if completed {
		recipients = dispatchedOrder(history)
	} else if recipients, err = e.recipients(ctx, tenant, acc); err != nil {
		return nil, err
	}
	// The answer is filled in place, a dispatch at its recipient's index:
	// a large fan-out holds no map of all its recipients.
	res := make([]events.Dispatch, len(recipients))
	var todo []int
	for i, s := range recipients {
		if d, ok := done[s]; ok {
			res[i] = events.Dispatch{RunID: d.RunID, SubscriberID: s, Status: d.Status}
		} else {
			todo = append(todo, i)
		}
	}
	done = nil
	for start := 0; start < len(todo); start += e.cfg.FanoutChunk {
		idx := todo[start:min(start+e.cfg.FanoutChunk, len(todo))]
		chunk := make([]string, len(idx))
		for j, i := range idx {
			chunk[j] = recipients[i]
		}
		dispatched, err := e.dispatch(ctx, tenant, acc, chunk, watch)
		if err != nil {
			return nil, err
		}
		for j, d := range dispatched {
			res[idx[j]] = events.Dispatch{RunID: d.RunID, SubscriberID: chunk[j], Status: d.Status}
		}
	}
	if !completed {
		if _, err := e.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.FanoutCompleted, Tenant: tenant,
			Data: events.FanoutCompletedData{Count: len(recipients)}, MsgID: tenant + ":" + acc.TransactionID + ":fanout-completed"}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// keepBackstop keeps a transaction's fan-out backstop (see Trigger) at
// least two thirds of FanoutBackstop ahead while this process works on its
// fan-out, until the returned stop is called: a fan-out worker takes the
// fan-out over only once this process stopped working on it (it died),
// not while one of its steps (resolving the audience, a chunk) outlasts
// FanoutBackstop, which would have two processes do the same chunks at
// once. stop returns once no re-arm is in flight, so a Cancel after it
// stays cancelled.
func (e *Engine) keepBackstop(ctx context.Context, tenant, txn string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.cfg.FanoutBackstop / 3)
		defer t.Stop()
		sched := eventlog.SchedSubject(tenant, "fanout", txn)
		for {
			select {
			case <-t.C:
				if err := e.log.Schedule(ctx, sched, eventlog.WorkFanout(tenant, txn),
					e.now().Add(e.cfg.FanoutBackstop), nil); err != nil && ctx.Err() == nil {
					e.logger.Warn("could not keep a fan-out backstop ahead", "tenant", tenant, "transaction", txn, "err", err)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// chunkID names a fan-out chunk by its transaction and recipients.
func chunkID(tenant, txn string, subs []string) string {
	h := sha256.New()
	for _, s := range append([]string{tenant, txn}, subs...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "chunk_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// prime puts a run just started into the state cache, so its first turn
// needs no read of its history. Not while the cache holds PrimeLimit
// states: a large fan-out starts runs far faster than they advance, and
// ~400 bytes primed for each of 100,000 runs would wait in memory for
// minutes; such a run reads its one event at its first turn.
func (e *Engine) prime(rec eventlog.Record, seq uint64) {
	if seq == 0 || e.states.size() >= e.cfg.PrimeLimit {
		return
	}
	data, err := json.Marshal(rec.Data)
	if err != nil {
		return
	}
	var st runstate.State
	if st.Apply(eventlog.Event{Type: rec.Type, TenantID: rec.Tenant, At: rec.At, Data: data, Seq: seq, Subject: rec.Subject}) == nil {
		e.states.put(&st)
	}
}

// dispatchedOrder lists the subscribers of a finished fan-out in the order
// they were dispatched.
func dispatchedOrder(history []eventlog.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, ev := range history {
		if ev.Type != events.NotificationsDispatched {
			continue
		}
		var d events.NotificationsDispatchedData
		if ev.Decode(&d) != nil {
			continue
		}
		for _, r := range d.Runs {
			if !seen[r.SubscriberID] {
				seen[r.SubscriberID] = true
				out = append(out, r.SubscriberID)
			}
		}
	}
	return out
}

// recipients resolves a trigger's target: a subscriber id passes through
// unchecked; topics fan out through subscriptions, de-duplicated.
func (e *Engine) recipients(ctx context.Context, tenant string, acc events.TriggerAcceptedData) ([]string, error) {
	if acc.To.SubscriberID != nil {
		return []string{*acc.To.SubscriberID}, nil
	}
	if err := e.store.WaitCaughtUp(ctx, e.log); err != nil {
		return nil, err
	}
	return e.store.ResolveTopics(tenant, acc.To.Topics)
}

// dispatch writes a chunk's ingress rows, starts its runs and records
// each run's dispatch. Once the runs are started, it reads the
// transaction (w): the runs of a cancelled one are cancelled, not
// enqueued (see txncancel.go).
func (e *Engine) dispatch(ctx context.Context, tenant string, acc events.TriggerAcceptedData, subs []string, w *txnWatch) ([]events.Dispatch, error) {
	txnSubject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	// Message ids derived from the chunk make a retried append (after a
	// lost acknowledgement) store the rows once.
	chunkID := chunkID(tenant, acc.TransactionID, subs)
	if _, err := e.appendTxn(ctx, w, eventlog.Record{Subject: txnSubject, Type: events.NotificationsReceived, Tenant: tenant,
		Data: events.NotificationsReceivedData{WorkflowID: acc.WorkflowID, SubscriberIDs: subs}, MsgID: chunkID + ":received"}); err != nil {
		return nil, err
	}
	at := e.now().UTC()
	recs := make([]eventlog.Record, len(subs))
	for i, s := range subs {
		runID := RunID(tenant, acc.TransactionID, s)
		recs[i] = eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunStarted,
			Tenant: tenant, MsgID: runID + ":started", Expect: true, At: at,
			Data: events.RunStartedData{RunID: runID, TransactionID: acc.TransactionID, WorkflowID: acc.WorkflowID, SubscriberID: &s}}
	}
	seqs, errs := e.log.AppendEach(ctx, recs)
	cancelled, err := e.checkTxn(ctx, tenant, acc.TransactionID, w)
	if err != nil {
		return nil, err
	}
	var stopIDs []string
	var stopSeqs []uint64
	// A broadcast's runs start on the bulk lane (bulk.go), the rest on
	// the runs' own.
	firstWork := eventlog.WorkRun
	if acc.Recipients != nil {
		firstWork = eventlog.WorkBulk
	}
	out := make([]events.Dispatch, len(subs))
	work := make([]eventlog.WorkMsg, 0, len(subs))
	for i, s := range subs {
		runID := RunID(tenant, acc.TransactionID, s)
		out[i] = events.Dispatch{SubscriberID: s, RunID: runID, Status: events.NotificationDispatched}
		switch {
		case cancelled != nil && errs[i] == nil:
			stopIDs, stopSeqs = append(stopIDs, runID), append(stopSeqs, seqs[i])
		case cancelled != nil && errors.Is(errs[i], eventlog.ErrConflict):
			// Started by another attempt at this fan-out: its own read of
			// the transaction decides (see cancelledStart).
		case errs[i] == nil:
			work = append(work, eventlog.WorkMsg{Subject: firstWork(tenant, runID), MsgID: runID + ":start"})
			e.prime(recs[i], seqs[i])
		case errors.Is(errs[i], eventlog.ErrConflict):
			// Started by an earlier attempt at this fan-out: dispatched. Its
			// first work message may have been lost with that attempt:
			// enqueue again (a duplicate turn finds nothing to do).
			work = append(work, eventlog.WorkMsg{Subject: firstWork(tenant, runID), MsgID: runID + ":start"})
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out[i] = events.Dispatch{SubscriberID: s, Status: events.NotificationFailed, Error: errs[i].Error()}
			e.logger.Warn("could not dispatch a run", "tenant", tenant, "transaction", acc.TransactionID,
				"subscriber", s, "err", errs[i])
		}
	}
	if cancelled != nil {
		if err := e.cancelledStart(ctx, tenant, stopIDs, stopSeqs, cancelled); err != nil {
			return nil, err
		}
	}
	if err := e.log.EnqueueBatch(ctx, work); err != nil {
		return nil, err
	}
	if _, err := e.appendTxn(ctx, w, eventlog.Record{Subject: txnSubject, Type: events.NotificationsDispatched, Tenant: tenant,
		Data: events.NotificationsDispatchedData{Runs: out}, MsgID: chunkID + ":dispatched"}); err != nil {
		return nil, err
	}
	return out, nil
}
