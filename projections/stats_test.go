package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestStatsBuckets: the projector counts runs started, completed, failed
// (by workflow) and cancelled, deliveries by kind and outcome (a
// provider's delivered and bounced reports included, opens not), and a
// run's trigger → first send latency, in buckets of a minute, a quarter
// hour and an hour; a window's read sums its buckets and places each in
// the series; buckets a resolution keeps no more are dropped as later
// events arrive, the coarser ones kept; a rebuild holds the same.
func TestStatsBuckets(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	sub := "ada"
	run := func(id, workflow string, start time.Time) {
		appendChannelEvent(t, log, "ten_a", eventlog.AggRun, id, events.RunStarted, start,
			events.RunStartedData{RunID: id, TransactionID: "txn_" + id, WorkflowID: workflow, SubscriberID: &sub})
	}
	delivery := func(attempt, runID, kind string, when time.Time, typ string, data any) {
		appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, runID+":"+attempt, typ, when, data)
	}
	attempt := func(attempt, runID, kind string) events.DeliveryAttempt {
		return events.DeliveryAttempt{AttemptID: attempt, IdempotencyKey: runID + ":" + attempt, RunID: runID, StepID: attempt,
			SubscriberID: sub, ChannelKey: kind + "-x", Kind: kind}
	}
	run("run_1", "welcome", at)
	run("run_2", "welcome", at.Add(30*time.Second))
	run("run_3", "digest", at.Add(90*time.Second))
	// run_1 sends an email 200 ms after its start (its first send), then
	// another; the first bounces, is opened.
	delivery("a1", "run_1", "email", at, events.DeliveryAttempted, events.DeliveryAttemptedData{DeliveryAttempt: attempt("a1", "run_1", "email")})
	delivery("a1", "run_1", "email", at.Add(200*time.Millisecond), events.DeliverySent, events.DeliverySentData{AttemptID: "a1", ProviderMessageID: "m1"})
	delivery("a2", "run_1", "email", at, events.DeliveryAttempted, events.DeliveryAttemptedData{DeliveryAttempt: attempt("a2", "run_1", "email")})
	delivery("a2", "run_1", "email", at.Add(40*time.Second), events.DeliverySent, events.DeliverySentData{AttemptID: "a2", ProviderMessageID: "m2"})
	delivery("r1", "run_1", "email", at.Add(50*time.Second), events.DeliveryReported, events.DeliveryReportedData{AttemptID: "a1", ChannelKey: "email-x", Status: events.ReportBounced, ProviderEventID: "e1"})
	delivery("r2", "run_1", "email", at.Add(50*time.Second), events.DeliveryReported, events.DeliveryReportedData{AttemptID: "a2", ChannelKey: "email-x", Status: events.ReportOpened, ProviderEventID: "e2"})
	// run_2's sms fails, its push is skipped; run_2 fails, run_3 fails,
	// run_1 completes, and later a run is cancelled.
	delivery("b1", "run_2", "sms", at, events.DeliveryAttempted, events.DeliveryAttemptedData{DeliveryAttempt: attempt("b1", "run_2", "sms")})
	delivery("b1", "run_2", "sms", at.Add(70*time.Second), events.DeliveryFailed, events.DeliveryFailedData{AttemptID: "b1", Code: "provider_rejected", Message: "no"})
	delivery("b2", "run_2", "push", at.Add(70*time.Second), events.DeliverySkipped, events.DeliverySkippedData{DeliveryAttempt: attempt("b2", "run_2", "push"), Reason: "preference"})
	appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_2", events.RunFailed, at.Add(80*time.Second), events.RunFailedData{Code: "step_failed", Message: "x"})
	appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_3", events.RunFailed, at.Add(100*time.Second), events.RunFailedData{Code: "step_failed", Message: "x"})
	appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_1", events.RunCompleted, at.Add(110*time.Second), events.RunCompletedData{})
	run("run_4", "welcome", at.Add(20*time.Minute))
	last := appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_4", events.RunCancelled, at.Add(20*time.Minute), events.RunCancelledData{Actor: "hk_x"})
	if err := st.WaitFor(context.Background(), last); err != nil {
		t.Fatal(err)
	}

	total, series, err := st.Stats("ten_a", projections.ByMinute, at, at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if total.RunsStarted != 4 || total.RunsCompleted != 1 || total.RunsFailed != 2 || total.RunsCancelled != 1 {
		t.Errorf("runs: %+v", total)
	}
	if d := total.Deliveries; d["email"]["sent"] != 2 || d["email"]["bounced"] != 1 || d["email"]["opened"] != 0 ||
		d["sms"]["failed"] != 1 || d["push"]["skipped"] != 1 {
		t.Errorf("deliveries: %v", d)
	}
	if top := total.TopFailing(5); len(top) != 2 || top[0] != (projections.WorkflowFailures{WorkflowID: "digest", Failed: 1}) ||
		top[1].WorkflowID != "welcome" {
		t.Errorf("top failing: %+v", top)
	}
	if p50, p99 := total.LatencyQuantile(0.5), total.LatencyQuantile(0.99); p50 != 250 || p99 != 250 {
		t.Errorf("latency: p50 %d p99 %d, want the 250 ms slot (one first send at 200 ms)", p50, p99)
	}
	if len(series) != 60 || series[0].RunsStarted != 2 || series[1].RunsStarted != 1 || series[1].RunsFailed != 2 ||
		series[20].RunsCancelled != 1 || series[59].RunsStarted != 0 {
		t.Errorf("series: %d buckets, first %+v, second %+v, 21st %+v", len(series), series[0], series[1], series[20])
	}
	if total, series, _ := st.Stats("ten_a", projections.ByQuarter, at, at.Add(24*time.Hour)); total.RunsStarted != 4 || len(series) != 96 ||
		series[0].RunsStarted != 3 || series[1].RunsStarted != 1 {
		t.Errorf("by quarter: %+v, %d buckets, %+v %+v", total, len(series), series[0], series[1])
	}
	if total, _, _ := st.Stats("ten_b", projections.ByHour, at, at.Add(time.Hour)); total.RunsStarted != 0 {
		t.Errorf("another tenant's stats: %+v", total)
	}

	// A day later, the minute buckets of then are dropped; the hours kept.
	last = appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_5", events.RunStarted, at.Add(25*time.Hour),
		events.RunStartedData{RunID: "run_5", TransactionID: "txn_5", WorkflowID: "welcome", SubscriberID: &sub})
	if err := st.WaitFor(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	if total, _, _ := st.Stats("ten_a", projections.ByMinute, at, at.Add(time.Hour)); total.RunsStarted != 0 {
		t.Errorf("minute buckets kept past their time: %+v", total)
	}
	if total, _, _ := st.Stats("ten_a", projections.ByHour, at, at.Add(26*time.Hour)); total.RunsStarted != 5 {
		t.Errorf("hour buckets: %+v", total)
	}
	checkRebuild(t, log, st)
}
