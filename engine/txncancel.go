package engine

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// A transaction's cancellation and its fan-out meet on the transaction's
// subject. The cancel appends TransactionCancelled there, then finishes
// the fan-out itself (FanOut is safe to run concurrently) and cancels
// every run the transaction's events name. Each chunk of a fan-out
// appends its runs' RunStarted, then reads the transaction's subject
// before it enqueues their first work:
//
//   - no TransactionCancelled yet: the runs are enqueued. Any later
//     cancel reads the chunk's runs as started (they were, before the
//     read) and cancels them;
//   - a TransactionCancelled: the runs are cancelled at once and never
//     enqueued: no turn of them is ever taken.
//
// So a run takes a turn only when its chunk read the transaction before
// the cancel was appended, and then the cancel finds it started; the runs
// a cancelled fan-out starts afterwards start cancelled. A run's work is
// only ever enqueued by its chunk (or by a signal or a rerun, which a
// finished run refuses).

// txnWatch is what a fan-out knows of its transaction's subject: the
// last sequence read and the cancellation, if one was read.
type txnWatch struct {
	after     uint64
	cancelled *events.TransactionCancelledData
}

// watchTxn starts a watch from a transaction's history.
func watchTxn(history []eventlog.Event) (*txnWatch, error) {
	w := &txnWatch{}
	return w, w.see(history)
}

func (w *txnWatch) see(evs []eventlog.Event) error {
	for _, ev := range evs {
		w.after = max(w.after, ev.Seq)
		if ev.Type == events.TransactionCancelled && w.cancelled == nil {
			var d events.TransactionCancelledData
			if err := ev.Decode(&d); err != nil {
				return err
			}
			w.cancelled = &d
		}
	}
	return nil
}

// checkTxn returns the transaction's cancellation, nil when it is not
// cancelled: what the watch knows, and what was appended since. When the
// subject's last event is the last the watch knows (the fan-out's own
// NotificationsReceived, appended through appendTxn), nothing was: one
// read of the last sequence, not a read of the history, which costs the
// server a scan of the stream's newest block.
func (e *Engine) checkTxn(ctx context.Context, tenant, txn string, w *txnWatch) (*events.TransactionCancelledData, error) {
	if w.cancelled != nil {
		return w.cancelled, nil
	}
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	last, err := e.log.SubjectLastSeq(ctx, subject)
	if err != nil {
		return nil, err
	}
	if last == w.after {
		return nil, nil
	}
	evs, err := e.log.History(ctx, subject, w.after)
	if err != nil {
		return nil, err
	}
	return w.cancelled, w.see(evs)
}

// appendTxn appends a fan-out's record to its transaction's subject,
// expecting the last event the watch knows as the subject's last: stored,
// it is the watch's new last, nothing unread between. Another writer
// appended since (a cancel, a fan-out working concurrently): the watch
// reads what it appended and the append is tried again, unless the
// record was among it (an earlier attempt whose acknowledgement was lost,
// or the same chunk written by another fan-out). rec needs a MsgID.
func (e *Engine) appendTxn(ctx context.Context, w *txnWatch, rec eventlog.Record) (uint64, error) {
	for {
		rec.Expect, rec.ExpectSeq = true, w.after
		seq, err := e.log.Append(ctx, rec)
		if err == nil {
			w.after = seq
			return seq, nil
		}
		if !errors.Is(err, eventlog.ErrConflict) {
			return 0, err
		}
		evs, err := e.log.History(ctx, rec.Subject, w.after)
		if err != nil {
			return 0, err
		}
		if err := w.see(evs); err != nil {
			return 0, err
		}
		for _, ev := range evs {
			if ev.ID == rec.MsgID {
				return ev.Seq, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// cancelledStart cancels the runs a chunk of a cancelled transaction's
// fan-out started (seqs[i] is the sequence of run i's RunStarted) before
// any turn of them: one append each, expecting the start, in one batch. A
// run whose start conflicted is not in runIDs: the fan-out that started
// it cancels it (it reads the transaction after its starts, as this one
// did), or enqueued it having read the transaction before the cancel, and
// then the cancel cancels it. A run another writer moved since (the
// cancel itself) is left to that writer.
func (e *Engine) cancelledStart(ctx context.Context, tenant string, runIDs []string, seqs []uint64,
	c *events.TransactionCancelledData) error {
	data := events.RunCancelledData{Reason: events.CancelTransaction, Actor: c.Actor, AtStart: true}
	at := e.now().UTC()
	recs := make([]eventlog.Record, len(runIDs))
	for i, runID := range runIDs {
		recs[i] = eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunCancelled,
			Tenant: tenant, Data: data, Expect: true, ExpectSeq: seqs[i], At: at}
	}
	_, errs := e.log.AppendEach(ctx, recs)
	for _, err := range errs {
		if err != nil && !errors.Is(err, eventlog.ErrConflict) {
			return err
		}
	}
	return nil
}
