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
	history, err := l.History(ctx, txnSubject, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchTxn(history)
	if err != nil {
		t.Fatal(err)
	}
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
