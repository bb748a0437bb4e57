package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// A fan-out under way when its transaction is cancelled: the chunk that
// read the transaction before the cancel enqueued its runs (the cancel
// finds them started); a chunk whose runs start after the cancel, even
// one begun before it (its watch read nothing of it), starts them
// cancelled, from whoever cancelled, and enqueues no work for them.
func TestCancelledFanoutStartsRunsCancelled(t *testing.T) {
	t.Parallel()
	e, l, _ := newTestEngine(t, Config{})
	ctx := context.Background()
	const tenant, txn = "ten_cancel", "txn-cancel"
	work := workConsumer(ctx, t, l, eventlog.WorkRunPrefix+">")
	acc := events.TriggerAcceptedData{WorkflowID: "wf", TransactionID: txn, Payload: []byte("{}"),
		To: events.Target{Topics: []string{"all"}}}
	txnSubject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	if _, err := l.Append(ctx, eventlog.Record{Subject: txnSubject, Type: events.TriggerAccepted, Tenant: tenant,
		Data: acc, Expect: true}); err != nil {
		t.Fatal(err)
	}
	var subs []string
	for i := range 5 {
		subs = append(subs, fmt.Sprintf("u%d", i))
	}
	w := watchOf(t, l, txnSubject)
	if _, err := e.dispatch(ctx, tenant, acc, subs[:2], w); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, eventlog.Record{Subject: txnSubject, Type: events.TransactionCancelled, Tenant: tenant,
		Data: events.TransactionCancelledData{TransactionID: txn, Actor: "hk_abcdefgh"}}); err != nil {
		t.Fatal(err)
	}
	// The same watch, which read the transaction before the cancel.
	res, err := e.dispatch(ctx, tenant, acc, subs[2:], w)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range subs {
		evs, err := l.History(ctx, eventlog.Subject(tenant, eventlog.AggRun, RunID(tenant, txn, s)), 0)
		if err != nil {
			t.Fatal(err)
		}
		st, err := runstate.Fold(evs)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if st.Status != runstate.Running || len(evs) != 1 {
				t.Fatalf("%s, started before the cancel: %s after %d events", s, st.Status, len(evs))
			}
			continue
		}
		var d events.RunCancelledData
		if len(evs) != 2 || evs[1].Type != events.RunCancelled || evs[1].Decode(&d) != nil ||
			d.Reason != events.CancelTransaction || d.Actor != "hk_abcdefgh" || !d.AtStart {
			t.Fatalf("%s, started after the cancel: history %v", s, evs)
		}
		if res[i-2].RunID != st.RunID || res[i-2].Status != events.NotificationDispatched {
			t.Fatalf("dispatch of %s: %+v", s, res[i-2])
		}
	}
	info, err := work.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumPending != 2 {
		t.Fatalf("%d runs enqueued, want the 2 started before the cancel", info.NumPending)
	}
}

// Cancelled returns only once a turn of the run under way in this process
// (holding the run's lock, maybe at a send) has ended.
func TestCancelledWaitsForTheTurnUnderWay(t *testing.T) {
	t.Parallel()
	e, _, _ := newTestEngine(t, Config{})
	ctx := context.Background()
	const runID = "run_000000000000000000000001"
	unlock := e.states.lock(runID)
	done := make(chan error, 1)
	go func() { done <- e.Cancelled(ctx, "ten_1", runID) }()
	// stillWaiting fails when Cancelled returned although the turn took
	// further steps (a yield of the scheduler several times over).
	stillWaiting := func(turn string) {
		t.Helper()
		for range 100 {
			runtime.Gosched()
		}
		select {
		case err := <-done:
			t.Fatalf("Cancelled returned (%v) while a turn of the run was %s", err, turn)
		default:
		}
	}
	// The turn holds the run: Cancelled is still waiting.
	stillWaiting("under way")
	// The turn steps aside with its Bridge answer still to record: still
	// waiting, until the turn is finished.
	e.asides.set(runID, true)
	unlock()
	stillWaiting("aside")
	e.asides.set(runID, false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A context that ends stops the wait.
	unlock = e.states.lock(runID)
	defer unlock()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.Cancelled(cctx, "ten_1", runID); err == nil {
		t.Fatal("Cancelled with an ended context returned no error while the run was held")
	}
}

// A fan-out's own records on its transaction expect the last event its
// watch knows: one that finds another writer's event since reads it (a
// cancel among them) before it is stored, and one already stored (its
// acknowledgement lost, or the same chunk written by another fan-out) is
// found, not stored twice. checkTxn then reads the transaction only when
// something was appended after the watch's last.
func TestAppendTxnReadsWhatCameBetween(t *testing.T) {
	t.Parallel()
	e, l, _ := newTestEngine(t, Config{})
	ctx := context.Background()
	const tenant, txn = "ten_chain", "txn-chain"
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	acc := events.TriggerAcceptedData{WorkflowID: "wf", TransactionID: txn, Payload: []byte("{}"),
		To: events.Target{Topics: []string{"all"}}}
	accSeq, err := l.Append(ctx, eventlog.Record{Subject: subject, Type: events.TriggerAccepted, Tenant: tenant, Data: acc, Expect: true})
	if err != nil {
		t.Fatal(err)
	}
	w := &txnWatch{after: accSeq}
	received := func(chunk string) eventlog.Record {
		return eventlog.Record{Subject: subject, Type: events.NotificationsReceived, Tenant: tenant,
			Data: events.NotificationsReceivedData{WorkflowID: "wf", SubscriberIDs: []string{chunk}}, MsgID: chunk + ":received"}
	}
	if c, err := e.checkTxn(ctx, tenant, txn, w); err != nil || c != nil {
		t.Fatalf("nothing appended: %v, %v", c, err)
	}
	seq1, err := e.appendTxn(ctx, w, received("c1"))
	if err != nil || w.after != seq1 || w.cancelled != nil {
		t.Fatalf("first chunk: seq %d, watch %+v, %v", seq1, w, err)
	}
	cancelSeq, err := l.Append(ctx, eventlog.Record{Subject: subject, Type: events.TransactionCancelled, Tenant: tenant,
		Data: events.TransactionCancelledData{TransactionID: txn, Actor: "hk_abcdefgh"}})
	if err != nil {
		t.Fatal(err)
	}
	seq2, err := e.appendTxn(ctx, w, received("c2"))
	if err != nil || seq2 <= cancelSeq || w.after != seq2 || w.cancelled == nil || w.cancelled.Actor != "hk_abcdefgh" {
		t.Fatalf("after the cancel: seq %d (cancel %d), watch %+v, %v", seq2, cancelSeq, w, err)
	}
	// A watch that knows nothing since the first chunk writes it again.
	stale := &txnWatch{after: accSeq}
	again, err := e.appendTxn(ctx, stale, received("c1"))
	if err != nil || again != seq1 || stale.cancelled == nil {
		t.Fatalf("the first chunk again: seq %d, want %d; watch %+v, %v", again, seq1, stale, err)
	}
	history, err := l.History(ctx, subject, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 4 {
		t.Fatalf("%d events on the transaction, want 4 (accepted, c1, cancel, c2): %v", len(history), history)
	}

	// checkTxn sees a cancel appended after the watch's last.
	const txn2 = "txn-chain-2"
	subject2 := eventlog.Subject(tenant, eventlog.AggTransaction, txn2)
	acc.TransactionID = txn2
	acc2, err := l.Append(ctx, eventlog.Record{Subject: subject2, Type: events.TriggerAccepted, Tenant: tenant, Data: acc, Expect: true})
	if err != nil {
		t.Fatal(err)
	}
	w2 := &txnWatch{after: acc2}
	if _, err := l.Append(ctx, eventlog.Record{Subject: subject2, Type: events.TransactionCancelled, Tenant: tenant,
		Data: events.TransactionCancelledData{TransactionID: txn2, Actor: "hk_ijklmnop"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := e.checkTxn(ctx, tenant, txn2, w2); err != nil || c == nil || c.Actor != "hk_ijklmnop" {
		t.Fatalf("cancelled after the watch's last: %v, %v", c, err)
	}
}

// A broadcast's fan-out taken up when the transaction's last events are
// a chunk the cancel's own fan-out wrote after the cancellation: the
// runs it starts start cancelled and none is enqueued, although the last
// event it resumes from is not the cancel.
func TestBroadcastTakenUpAfterACancelsChunkStartsRunsCancelled(t *testing.T) {
	t.Parallel()
	e, l, store := newTestEngine(t, Config{FanoutChunk: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go store.Run(ctx, l, nil)
	const tenant, txn = "ten_bcc", "txn-bcc"
	bulk := workConsumer(ctx, t, l, eventlog.WorkBulkPrefix+">")
	var subs []string
	var recs []eventlog.Record
	for i := range 5 {
		s := fmt.Sprintf("u%d", i)
		subs = append(subs, s)
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, s), Type: events.SubscriberUpserted,
			Tenant: tenant, Data: events.SubscriberUpsertedData{SubscriberID: s, Contacts: map[string][]string{}}},
			eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTopic, "all"), Type: events.SubscriberSubscribed,
				Tenant: tenant, Data: events.SubscriberSubscribedData{SubscriberID: s, TopicKey: "all"}})
	}
	for _, err := range func() []error { _, errs := l.AppendEach(ctx, recs); return errs }() {
		if err != nil {
			t.Fatal(err)
		}
	}
	n := len(subs)
	acc := events.TriggerAcceptedData{WorkflowID: "wf", TransactionID: txn, Payload: []byte("{}"),
		To: events.Target{Topics: []string{"all"}}, Recipients: &n}
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	if _, err := l.Append(ctx, eventlog.Record{Subject: subject, Type: events.TriggerAccepted, Tenant: tenant, Data: acc, Expect: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, eventlog.Record{Subject: subject, Type: events.TransactionCancelled, Tenant: tenant,
		Data: events.TransactionCancelledData{TransactionID: txn, Actor: "hk_abcdefgh"}}); err != nil {
		t.Fatal(err)
	}
	// The cancel's fan-out: its first chunk, after the cancellation.
	w := watchOf(t, l, subject)
	if _, err := e.dispatch(ctx, tenant, acc, subs[:2], w); err != nil {
		t.Fatal(err)
	}
	if err := e.broadcast(ctx, tenant, acc); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		evs, err := l.History(ctx, eventlog.Subject(tenant, eventlog.AggRun, RunID(tenant, txn, s)), 0)
		if err != nil {
			t.Fatal(err)
		}
		var d events.RunCancelledData
		if len(evs) != 2 || evs[1].Type != events.RunCancelled || evs[1].Decode(&d) != nil || !d.AtStart || d.Actor != "hk_abcdefgh" {
			t.Fatalf("%s: history %v, want started cancelled", s, evs)
		}
	}
	info, err := bulk.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumPending != 0 {
		t.Fatalf("%d runs enqueued on the bulk lane, want none", info.NumPending)
	}
}

// watchOf is a fan-out's watch of a transaction as its whole history is
// now.
func watchOf(t *testing.T, l *eventlog.Log, subject string) *txnWatch {
	t.Helper()
	history, err := l.History(context.Background(), subject, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchTxn(history)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
