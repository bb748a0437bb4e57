package control

import (
	"context"
	"errors"
	"sync"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/runstate"
)

// flowParallel is how many runs a transaction-wide command works on at
// once: each is a read of the run and an append.
const flowParallel = 16

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
	if !ValidRunID(runID) {
		return errRunNotFound("")
	}
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	var seq uint64
	err := retry(ctx, func() error {
		evs, err := c.log.History(ctx, subject, 0)
		if err != nil {
			return err
		}
		st, err := runstate.Fold(evs)
		if err != nil {
			return err
		}
		if st.RunID == "" {
			return errRunNotFound(runID)
		}
		if st.Status != runstate.Failed {
			return apierr.Errorf(apierr.CodeRunNotFailed, "run %s is %s, not failed", runID, st.Status)
		}
		d := events.RunRerunData{Actor: actor}
		if st.Error != nil {
			d.Code, d.Message = st.Error.Code, st.Error.Message
		}
		if n := len(st.Steps); n > 0 && st.Steps[n-1].Status == runstate.StepFailed {
			d.StepID = st.Steps[n-1].StepID
		}
		seq, err = c.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.RunRerun, Tenant: tenant, Data: d,
			Expect: true, ExpectSeq: st.LastSeq})
		return err
	})
	if err != nil {
		return err
	}
	if err := c.store.WaitFor(ctx, seq); err != nil {
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

// CancelTransaction cancels every unfinished run of a transaction,
// including the runs its fan-out has not started yet, and returns how
// many runs the transaction's cancellation ended.
//
// It appends TransactionCancelled on the transaction (once: a repeated
// cancel finds it, and answers the same count), finishes the fan-out
// itself, every run it starts from then on cancelled before its first
// turn (see the engine's txncancel.go), and cancels the runs started
// before. The count is of the transaction's runs ended by its
// cancellation: the runs cancelled one by one before, or finished
// otherwise, are not in it.
//
// Errors: 404 transaction_not_found.
func (c *Control) CancelTransaction(ctx context.Context, tenant, txn, actor string) (int, error) {
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	var acc events.TriggerAcceptedData
	var cancel events.TransactionCancelledData
	var completed bool
	var dispatched []events.Dispatch
	err := retry(ctx, func() error {
		evs, a, err := c.transaction(ctx, tenant, txn)
		if err != nil {
			return err
		}
		acc, completed, dispatched = a, false, dispatched[:0]
		found := false
		for _, ev := range evs {
			switch ev.Type {
			case events.TransactionCancelled:
				if !found {
					found = true
					if err := ev.Decode(&cancel); err != nil {
						return err
					}
				}
			case events.FanoutCompleted:
				completed = true
			case events.NotificationsDispatched:
				var d events.NotificationsDispatchedData
				if err := ev.Decode(&d); err != nil {
					return err
				}
				dispatched = append(dispatched, d.Runs...)
			}
		}
		if found {
			return nil
		}
		cancel = events.TransactionCancelledData{TransactionID: txn, Actor: actor}
		_, err = c.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.TransactionCancelled, Tenant: tenant,
			Data: cancel, Expect: true, ExpectSeq: evs[len(evs)-1].Seq})
		return err
	})
	if err != nil {
		return 0, err
	}
	if !completed {
		// The fan-out may be under way, here or in another process, or
		// stopped by a crash: finishing it here makes every recipient's
		// run known now; the ones it starts start cancelled.
		if dispatched, err = c.rt.FanOut(ctx, tenant, acc); err != nil {
			return 0, err
		}
	}
	data := events.RunCancelledData{Reason: events.CancelTransaction, Actor: cancel.Actor}
	var mu sync.Mutex
	var n int
	var last uint64
	err = forEachRun(ctx, dispatched, func(ctx context.Context, runID string) error {
		ended, seq, err := c.cancelForTransaction(ctx, tenant, runID, data)
		if err != nil || !ended {
			return err
		}
		mu.Lock()
		n, last = n+1, max(last, seq)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, c.store.WaitFor(ctx, last)
}

// cancelForTransaction cancels one run of a cancelled transaction unless
// it is finished; ended reports whether the transaction's cancellation
// ended it (now, or before: by its fan-out, or by an earlier cancel), seq
// is the sequence of the RunCancelled this call appended (0: none).
func (c *Control) cancelForTransaction(ctx context.Context, tenant, runID string,
	data events.RunCancelledData) (ended bool, seq uint64, err error) {
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	// Most runs of a transaction cancelled mid fan-out were cancelled by
	// the fan-out: their last event says so, one read instead of the
	// whole history.
	if last, ok, err := c.log.Last(ctx, subject); err != nil || !ok {
		return false, 0, err
	} else if last.Type == events.RunCancelled {
		var d events.RunCancelledData
		if len(last.Data) > 0 {
			if err := last.Decode(&d); err != nil {
				return false, 0, err
			}
		}
		return d.Reason == events.CancelTransaction, 0, nil
	}
	err = retry(ctx, func() error {
		evs, err := c.log.History(ctx, subject, 0)
		if err != nil {
			return err
		}
		st, err := runstate.Fold(evs)
		if err != nil || st.RunID == "" {
			return err
		}
		if st.Status.Finished() {
			ended, err = cancelledWithTransaction(evs)
			return err
		}
		seq, err = c.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.RunCancelled, Tenant: tenant,
			Data: data, Expect: true, ExpectSeq: st.LastSeq})
		ended = err == nil
		return err
	})
	if err != nil || seq == 0 {
		return ended, seq, err
	}
	return true, seq, c.rt.Cancelled(ctx, tenant, runID)
}

// cancelledWithTransaction reports whether a finished run's history ends
// with its transaction's cancellation.
func cancelledWithTransaction(evs []eventlog.Event) (bool, error) {
	st := &runstate.State{}
	for _, ev := range evs {
		if err := st.Apply(ev); err != nil {
			return false, err
		}
		if st.Status.Finished() {
			if ev.Type != events.RunCancelled {
				return false, nil
			}
			var d events.RunCancelledData
			if len(ev.Data) > 0 {
				if err := ev.Decode(&d); err != nil {
					return false, err
				}
			}
			return d.Reason == events.CancelTransaction, nil
		}
	}
	return false, nil
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
