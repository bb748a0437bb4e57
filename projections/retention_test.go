package projections_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// The finished runs retention finds: a run is listed from its end, once
// the cutoff is past it; a rerun takes it out until it ends again, at its
// new end; an unfinished run is never listed; ForgetRuns drops its rows
// and its transaction's; and a rebuild from the log after the run's events
// were purged holds what the live store holds.
func TestExpiredRunsFollowTheirEnd(t *testing.T) {
	log, st := followed(t)
	const tenant = "ten_1"
	appendTenant(t, log, tenant)
	var last uint64
	add := func(runID, typ string, at time.Time, data any) {
		last = appendChannelEvent(t, log, tenant, eventlog.AggRun, runID, typ, at, data)
	}
	sub := "ada"
	last = appendChannelEvent(t, log, tenant, eventlog.AggTransaction, "txn_1", events.TriggerAccepted, t0,
		events.TriggerAcceptedData{TransactionID: "txn_1", WorkflowID: "wf", To: events.Target{SubscriberID: &sub}})
	add("run_done", events.RunStarted, t0, events.RunStartedData{RunID: "run_done", TransactionID: "txn_1", WorkflowID: "wf", SubscriberID: &sub})
	add("run_done", events.RunFailed, t0.Add(time.Minute), events.RunFailedData{Code: "bridge_error", Message: "x"})
	add("run_open", events.RunStarted, t0, events.RunStartedData{RunID: "run_open", TransactionID: "txn_2", WorkflowID: "wf", SubscriberID: &sub})
	wait := func() {
		t.Helper()
		if err := st.WaitFor(t.Context(), last); err != nil {
			t.Fatal(err)
		}
	}
	expired := func(before time.Time) []projections.ExpiredRun {
		t.Helper()
		wait()
		runs, err := st.ExpiredRuns(before, 10)
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	if runs := expired(t0.Add(time.Minute)); len(runs) != 0 {
		t.Fatalf("listed at its end, not after: %+v", runs)
	}
	if runs := expired(t0.Add(time.Hour)); len(runs) != 1 || runs[0].RunID != "run_done" || !runs[0].EndedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after its end: %+v", runs)
	}
	add("run_done", events.RunRerun, t0.Add(2*time.Minute), events.RunRerunData{Code: "bridge_error", Message: "x"})
	if runs := expired(t0.Add(time.Hour)); len(runs) != 0 {
		t.Fatalf("a rerun run is listed: %+v", runs)
	}
	add("run_done", events.RunCompleted, t0.Add(3*time.Minute), events.RunCompletedData{})
	runs := expired(t0.Add(time.Hour))
	if len(runs) != 1 || !runs[0].EndedAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("after the rerun's end: %+v", runs)
	}
	if err := log.Purge(t.Context(), []string{eventlog.Subject(tenant, eventlog.AggRun, "run_done")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.ForgetRuns(runs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RunState(tenant, "run_done"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("a forgotten run: %v", err)
	}
	if runs := expired(t0.Add(time.Hour)); len(runs) != 0 {
		t.Fatalf("listed once forgotten: %+v", runs)
	}
	txns, err := st.ExpiringTransactions(10)
	if err != nil || len(txns) != 1 || txns[0].TransactionID != "txn_1" {
		t.Fatalf("expiring transactions %+v (%v), want txn_1", txns, err)
	}
	if err := log.Purge(t.Context(), []string{eventlog.Subject(tenant, eventlog.AggTransaction, "txn_1")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.ForgetTransactions(txns[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TransactionProgress(tenant, "txn_1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("a forgotten transaction: %v", err)
	}
	if _, err := st.RunState(tenant, "run_open"); err != nil {
		t.Fatalf("the unfinished run: %v", err)
	}
	// A rebuild holds what the live store holds, but the stats: the live
	// counters of the minute the forgotten run ran in still count it.
	live, err := st.ChecksumWithoutStats()
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := projections.Rebuild(t.Context(), filepath.Join(t.TempDir(), "rebuilt.db"), log, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if sum, err := rebuilt.ChecksumWithoutStats(); err != nil || sum != live {
		t.Fatalf("rebuilt %s != live %s (%v)", sum, live, err)
	}
}

// A cron tick's transaction (no subscriber, no fan-out events) is complete
// with its one run: running while the run is, finished once it ended, and
// expiring once the run was forgotten. It used to stay fanning_out.
func TestACronTicksTransactionEndsWithItsRun(t *testing.T) {
	log, st := followed(t)
	const tenant = "ten_1"
	appendTenant(t, log, tenant)
	appendChannelEvent(t, log, tenant, eventlog.AggTransaction, "tick_1", events.TriggerAccepted, t0,
		events.TriggerAcceptedData{TransactionID: "tick_1", WorkflowID: "wf", Cron: true})
	appendChannelEvent(t, log, tenant, eventlog.AggRun, "run_tick", events.RunStarted, t0,
		events.RunStartedData{RunID: "run_tick", TransactionID: "tick_1", WorkflowID: "wf"})
	status := func(last uint64) string {
		t.Helper()
		if err := st.WaitFor(t.Context(), last); err != nil {
			t.Fatal(err)
		}
		p, err := st.TransactionProgress(tenant, "tick_1")
		if err != nil {
			t.Fatal(err)
		}
		return p.Status()
	}
	last, err := log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s := status(last); s != projections.TxnRunning {
		t.Fatalf("a tick's transaction with its run under way: %s", s)
	}
	last = appendChannelEvent(t, log, tenant, eventlog.AggRun, "run_tick", events.RunCompleted, t0.Add(time.Second),
		events.RunCompletedData{})
	if s := status(last); s != projections.TxnFinished {
		t.Fatalf("a tick's transaction with its run completed: %s", s)
	}
	runs, err := st.ExpiredRuns(t0.Add(time.Hour), 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("expired runs %+v (%v)", runs, err)
	}
	if err := st.ForgetRuns(runs); err != nil {
		t.Fatal(err)
	}
	if txns, err := st.ExpiringTransactions(10); err != nil || len(txns) != 1 || txns[0].TransactionID != "tick_1" {
		t.Fatalf("expiring transactions %+v (%v), want the tick's", txns, err)
	}
}

// A cancel is read at the engine's next question once applied, and a
// cancelled transaction that retention forgot is no longer cancelled:
// with the cancelled transactions kept in memory, and with too many of
// them to keep.
func TestTransactionCancelledFollowsCancelsAndRetention(t *testing.T) {
	for _, keep := range []int{4096, 1} {
		projections.KeepCancels(t, keep)
		log, st := followed(t)
		const tenant = "ten_1"
		appendTenant(t, log, tenant)
		sub := "ada"
		cancelled := func(txn string) (string, bool) {
			t.Helper()
			actor, ok, err := st.TransactionCancelled(tenant, txn)
			if err != nil {
				t.Fatal(err)
			}
			return actor, ok
		}
		var last uint64
		for _, txn := range []string{"txn_1", "txn_2", "txn_3"} {
			last = appendChannelEvent(t, log, tenant, eventlog.AggTransaction, txn, events.TriggerAccepted, t0,
				events.TriggerAcceptedData{TransactionID: txn, WorkflowID: "wf", To: events.Target{SubscriberID: &sub}})
		}
		if err := st.WaitFor(t.Context(), last); err != nil {
			t.Fatal(err)
		}
		if _, ok := cancelled("txn_1"); ok {
			t.Fatalf("keep %d: txn_1 cancelled before its cancel", keep)
		}
		for _, txn := range []string{"txn_1", "txn_2"} {
			last = appendChannelEvent(t, log, tenant, eventlog.AggTransaction, txn, events.TransactionCancelled, t0,
				events.TransactionCancelledData{TransactionID: txn, Actor: "hk_" + txn})
			if err := st.WaitFor(t.Context(), last); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if actor, ok := cancelled(txn); !ok || actor != "hk_"+txn {
					t.Fatalf("keep %d: %s after its cancel: %q %v", keep, txn, actor, ok)
				}
			}
		}
		if _, ok := cancelled("txn_3"); ok {
			t.Fatalf("keep %d: txn_3 cancelled", keep)
		}
		if _, ok, err := st.TransactionCancelled("ten_2", "txn_1"); ok || err != nil {
			t.Fatalf("keep %d: another tenant's txn_1 is cancelled (%v)", keep, err)
		}
		if err := st.ForgetTransactions([]projections.ExpiringTransaction{{TenantID: tenant, TransactionID: "txn_1"}}); err != nil {
			t.Fatal(err)
		}
		if _, ok := cancelled("txn_1"); ok {
			t.Fatalf("keep %d: txn_1 still cancelled once forgotten", keep)
		}
		if _, ok := cancelled("txn_2"); !ok {
			t.Fatalf("keep %d: txn_2 no longer cancelled", keep)
		}
	}
}
