package control

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/runstate"
)

// flowParallel is how many runs a transaction-wide command works on at
// once: each is a read of the run and an append.
const flowParallel = 64

func errTransactionNotFound(txn string) error {
	if txn == "" {
		return apierr.New(apierr.CodeTransactionNotFound, "no such transaction")
	}
	return apierr.New(apierr.CodeTransactionNotFound, "no transaction "+txn)
}

// Rerun resumes a failed run at its failed step: the step is tried again
// with its attempts counted afresh, the completed steps are kept and
// replayed to the Bridge, never called again. It is one RunRerun event on
// the run (its failure stays on record), with actor (the API key's prefix)
// as who asked.
//
// Errors: 404 run_not_found; 409 run_not_failed.
func (c *Control) Rerun(ctx context.Context, tenant, runID, actor string) error {
	seq, err := c.appendToRun(ctx, tenant, runID, events.RunRerun, func(st *runstate.State) (any, error) {
		if st.Status != runstate.Failed {
			return nil, apierr.Errorf(apierr.CodeRunNotFailed, "run %s is %s, not failed", runID, st.Status)
		}
		d := events.RunRerunData{Actor: actor}
		if st.Error != nil {
			d.Code, d.Message = st.Error.Code, st.Error.Message
		}
		if n := len(st.Steps); n > 0 && st.Steps[n-1].Status == runstate.StepFailed {
			d.StepID = st.Steps[n-1].StepID
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	return c.rt.Wake(ctx, tenant, runID, seq)
}

// transaction reads a transaction's history and its trigger; 404 when it
// has none.
func (c *Control) transaction(ctx context.Context, tenant, txn string) ([]eventlog.Event, events.TriggerAcceptedData, error) {
	var acc events.TriggerAcceptedData
	if !ValidTransactionID(txn) {
		return nil, acc, errTransactionNotFound("")
	}
	evs, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn), 0)
	if err != nil {
		return nil, acc, err
	}
	if len(evs) == 0 || evs[0].Type != events.TriggerAccepted {
		return nil, acc, errTransactionNotFound(txn)
	}
	return evs, acc, evs[0].Decode(&acc)
}

// fanoutIdle is how long a cancel waits for a word of the transaction's
// fan-out (a chunk dispatched, its end) before it finishes the fan-out
// itself: the fan-out's process may have died. Waiting less only costs
// work done twice.
const fanoutIdle = 2 * time.Second

// CancelTransaction cancels every unfinished run of a transaction,
// including the runs its fan-out has not started yet, and returns how
// many runs this call ended.
//
// It appends TransactionCancelled on the transaction (once: a repeated
// cancel finds it, ends only what is left, and counts that: 0 when the
// first cancel ended every run). A fan-out that reads it
// starts its remaining runs cancelled, before any turn of them (see the
// engine's txncancel.go); the runs a fan-out started before are cancelled
// here, chunk by chunk as the fan-out dispatches them, so that few of them
// take a turn meanwhile. A fan-out that says nothing for fanoutIdle is
// finished here (a trigger to one subscriber at once): every recipient's
// run is known before the answer. The count is of the runs this call
// ended: those it cancelled, and, for the call that recorded the
// cancellation, those a fan-out started cancelled; the runs cancelled one
// by one before, by another cancel of the transaction, or finished
// otherwise, are not in it.
//
// A broadcast (a trigger answered before its fan-out, see
// BroadcastThreshold) is answered once its cancellation is in this
// process's projections, and swept in the background: from then on no
// turn of its runs calls the Bridge or sends (the engine reads the
// cancellation before each), and the sweep ends the runs that take no
// turn. Its count is then the runs unfinished when the cancellation was
// recorded, those not started yet included (a turn already under way may
// still finish its run); a repeated cancel counts 0 and sweeps again.
//
// Errors: 404 transaction_not_found.
func (c *Control) CancelTransaction(ctx context.Context, tenant, txn, actor string) (int, error) {
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	var acc events.TriggerAcceptedData
	var cancel events.TransactionCancelledData
	var evs []eventlog.Event
	var seq uint64       // the TransactionCancelled's
	first := false       // this call recorded the cancellation
	cancelledBefore := 0 // a broadcast's runs cancelled before it, one by one
	err := retry(ctx, func() error {
		var err error
		if evs, acc, err = c.transaction(ctx, tenant, txn); err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Type == events.TransactionCancelled {
				seq = ev.Seq
				return ev.Decode(&cancel)
			}
		}
		if acc.Recipients != nil {
			p, err := c.store.TransactionProgress(tenant, txn)
			if err != nil && !errors.Is(err, projections.ErrNotFound) {
				return err
			}
			cancelledBefore = p.Runs.Cancelled
		}
		cancel = events.TransactionCancelledData{TransactionID: txn, Actor: actor}
		seq, err = c.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.TransactionCancelled, Tenant: tenant,
			Data: cancel, Expect: true, ExpectSeq: evs[len(evs)-1].Seq})
		first = err == nil
		return err
	})
	if err != nil {
		return 0, err
	}
	sw := &txnSweep{c: c, tenant: tenant, swept: map[string]bool{}, first: first,
		data: events.RunCancelledData{Reason: events.CancelTransaction, Actor: cancel.Actor}}
	if acc.Recipients != nil {
		return c.cancelBroadcast(ctx, tenant, txn, acc, evs, seq, cancelledBefore, sw)
	}
	if err := c.sweepTransaction(ctx, tenant, acc, evs, sw); err != nil {
		return 0, err
	}
	return sw.n, c.store.WaitFor(ctx, sw.last)
}

// cancelBroadcast answers a broadcast's cancel once the cancellation
// (seq) is in the projections, and sweeps it in the background (see
// CancelTransaction). Its count is the runs neither completed, failed,
// digested, nor cancelled before it (cancelledBefore, read before it was
// recorded): the runs its fan-out or the engine cancelled since, before
// the count is read, are this call's.
func (c *Control) cancelBroadcast(ctx context.Context, tenant, txn string, acc events.TriggerAcceptedData,
	evs []eventlog.Event, seq uint64, cancelledBefore int, sw *txnSweep) (int, error) {
	if err := c.store.WaitFor(ctx, seq); err != nil {
		return 0, err
	}
	n := 0
	if sw.first {
		p, err := c.store.TransactionProgress(tenant, txn)
		if err != nil {
			return 0, err
		}
		total := *acc.Recipients
		if p.Recipients != nil {
			total = *p.Recipients
		}
		r := p.Runs
		n = max(total-(r.Completed+r.Failed+r.Digested+cancelledBefore), 0)
	}
	c.background(func(ctx context.Context) {
		if err := c.sweepTransaction(ctx, tenant, acc, evs, sw); err != nil && ctx.Err() == nil {
			c.logger.Warn("the sweep of a cancelled broadcast stopped; its runs end at their next turn, "+
				"or cancel it again", "tenant", tenant, "transaction", txn, "err", err)
		}
	})
	return n, nil
}

// sweepTransaction cancels the runs of a cancelled transaction as its
// fan-out dispatches them, from its events evs on, until the fan-out is
// over, finishing the fan-out itself when it says nothing for fanoutIdle.
func (c *Control) sweepTransaction(ctx context.Context, tenant string, acc events.TriggerAcceptedData,
	evs []eventlog.Event, sw *txnSweep) error {
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	completed := false
	after := uint64(0)
	heard := time.Now()
	for !completed {
		var ds []events.Dispatch
		for _, ev := range evs {
			after = max(after, ev.Seq)
			switch ev.Type {
			case events.NotificationsDispatched:
				var d events.NotificationsDispatchedData
				if err := ev.Decode(&d); err != nil {
					return err
				}
				ds = append(ds, d.Runs...)
			case events.FanoutCompleted:
				completed = true
			}
		}
		if err := sw.sweep(ctx, ds); err != nil {
			return err
		}
		if len(evs) > 0 {
			heard = time.Now()
		}
		if completed {
			break
		}
		if acc.To.SubscriberID != nil || time.Since(heard) >= fanoutIdle {
			// Finish the fan-out here (a trigger to one subscriber has no
			// fan-out events to wait for): the runs it starts now start
			// cancelled.
			all, err := c.rt.FanOut(ctx, tenant, acc)
			if err != nil {
				return err
			}
			return sw.sweep(ctx, all)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		var err error
		if evs, err = c.log.History(ctx, subject, after); err != nil {
			return err
		}
	}
	return nil
}

// txnSweep cancels the runs of a cancelled transaction, each once.
type txnSweep struct {
	c      *Control
	tenant string
	data   events.RunCancelledData
	// first: the sweep's call recorded the cancellation, so the runs a
	// fan-out started cancelled are its doing.
	first bool
	swept map[string]bool
	mu    sync.Mutex
	n     int    // runs the call ended
	last  uint64 // the last RunCancelled appended
}

// sweep cancels the runs of ds not swept yet, the last dispatched first:
// the engine takes a chunk's runs in the order they were enqueued, so the
// sweep meets its turns halfway rather than trailing them.
func (sw *txnSweep) sweep(ctx context.Context, ds []events.Dispatch) error {
	var todo []events.Dispatch
	for i := len(ds) - 1; i >= 0; i-- {
		if d := ds[i]; d.RunID != "" && !sw.swept[d.RunID] {
			sw.swept[d.RunID] = true
			todo = append(todo, d)
		}
	}
	return forEachRun(ctx, todo, func(ctx context.Context, runID string) error {
		ended, seq, err := sw.c.cancelForTransaction(ctx, sw.tenant, runID, sw.data, sw.first)
		if err != nil || !ended {
			return err
		}
		sw.mu.Lock()
		sw.n, sw.last = sw.n+1, max(sw.last, seq)
		sw.mu.Unlock()
		return nil
	})
}

// cancelForTransaction cancels one run of a cancelled transaction unless
// it is finished; ended reports whether the call ended it: now, or, when
// first (the call recorded the cancellation), by its fan-out, which
// started the run cancelled, or by the engine, which read the
// cancellation at the run's turn. seq is the sequence of the RunCancelled this
// call appended (0: none).
//
// It reads the run's last event only, not its history: a run is finished
// exactly when its last event ends it (every writer of a run expects the
// last sequence of an unfinished run, a rerun's excepted), and a cancel
// expecting that event's sequence cannot land after another writer's. A
// large transaction's runs are read while the engine advances them: one
// read each keeps the cancel ahead of the turns.
func (c *Control) cancelForTransaction(ctx context.Context, tenant, runID string,
	data events.RunCancelledData, first bool) (ended bool, seq uint64, err error) {
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	err = retry(ctx, func() error {
		last, ok, err := c.log.Last(ctx, subject)
		if err != nil || !ok {
			return err
		}
		switch last.Type {
		case events.RunCancelled:
			var d events.RunCancelledData
			if len(last.Data) > 0 {
				if err := last.Decode(&d); err != nil {
					return err
				}
			}
			ended = first && d.Reason == events.CancelTransaction
			return nil
		case events.RunCompleted, events.RunFailed, events.RunDigested:
			return nil
		}
		seq, err = c.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.RunCancelled, Tenant: tenant,
			Data: data, Expect: true, ExpectSeq: last.Seq})
		ended = err == nil
		return err
	})
	if err != nil || seq == 0 {
		return ended, seq, err
	}
	return true, seq, c.rt.Cancelled(ctx, tenant, runID)
}

// forEachRun calls fn for the run of each dispatch that has one,
// flowParallel at once, and returns the first error.
func forEachRun(ctx context.Context, ds []events.Dispatch, fn func(context.Context, string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ids := make(chan string)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range flowParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if err := fn(ctx, id); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, d := range ds {
		if d.RunID == "" {
			continue
		}
		select {
		case ids <- d.RunID:
		case <-ctx.Done():
			break feed
		}
	}
	close(ids)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// TransactionSignal is a signal for the unfinished runs of a transaction.
type TransactionSignal struct {
	SignalCommand
	// TransactionID names the transaction. Required.
	TransactionID string
	// SubscriberID, when set, narrows the signal to the transaction's run
	// for this subscriber.
	SubscriberID *string
}

// SignalTransaction buffers a signal in every unfinished run of a
// transaction (of the subscriber, when given), wakes each, and returns
// how many runs took it. A run that finished meanwhile, or already holds
// MaxPendingSignals unconsumed, is not counted.
//
// Errors: a *apierr.ValidationError naming event, payload, transactionId
// or subscriberId; 404 transaction_not_found.
func (c *Control) SignalTransaction(ctx context.Context, tenant string, cmd TransactionSignal) (int, error) {
	var p apierr.Problems
	data := cmd.check(&p)
	if cmd.TransactionID == "" {
		p.Add("transactionId", "is required")
	} else if !ValidTransactionID(cmd.TransactionID) {
		p.Add("transactionId", "must be 1 to %d printable characters", MaxTxnIDChars)
	}
	if cmd.SubscriberID != nil && !ValidExternalID(*cmd.SubscriberID) {
		p.Add("subscriberId", "must be 1 to %d printable characters", MaxExternalIDChars)
	}
	if err := p.Err(); err != nil {
		return 0, err
	}
	if _, _, err := c.transaction(ctx, tenant, cmd.TransactionID); err != nil {
		return 0, err
	}
	// The runs of the transaction as the projections hold them, once they
	// hold every event appended before this request: a run started
	// before it is listed (and then read from the log itself).
	if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
		return 0, err
	}
	filter := projections.RunFilter{TransactionID: cmd.TransactionID}
	if cmd.SubscriberID != nil {
		filter.SubscriberID = *cmd.SubscriberID
	}
	var live []events.Dispatch
	pg := projections.Page{Limit: 500}
	for {
		runs, next, err := c.store.Runs(tenant, filter, pg)
		if err != nil {
			return 0, err
		}
		for _, run := range runs {
			if !run.Status.Finished() {
				live = append(live, events.Dispatch{RunID: run.RunID})
			}
		}
		if next == "" {
			break
		}
		pg.Cursor = next
	}
	var mu sync.Mutex
	var n int
	err := forEachRun(ctx, live, func(ctx context.Context, runID string) error {
		err := c.signalRun(ctx, tenant, runID, data)
		if errors.Is(err, apierr.ErrConflict) || errors.Is(err, apierr.ErrNotFound) {
			return nil // finished meanwhile, or too many signals held
		}
		if err == nil {
			mu.Lock()
			n++
			mu.Unlock()
		}
		return err
	})
	return n, err
}
