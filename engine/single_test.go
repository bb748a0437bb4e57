package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// singleAckWait is the AckWait of the services of these tests: how long a
// work message whose trigger is not accepted is kept.
const singleAckWait = 2 * time.Second

// singleFixture is a service with a two-step workflow (a `run` step, then
// an email) and a stand-in delivery that counts the sends.
type singleFixture struct {
	h        *testherald.Herald
	tenant   string
	key      string
	delivery *testherald.StandInDelivery
}

func startSingle(t *testing.T) *singleFixture {
	t.Helper()
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL, AckWait: singleAckWait})
	f := &singleFixture{h: h, delivery: d}
	f.tenant, f.key = h.Tenant("Acme")
	wf := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Run(ctx, "load", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return err
		}
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Hi", Body: "Hello"}, nil
		})
		return err
	})
	h.Bridge(f.key, bridge.NewRegistry().MustRegister(wf))
	return f
}

// accepted is the TriggerAccepted of a trigger of welcome to sub.
func (f *singleFixture) accepted(txn, sub string) eventlog.Record {
	return eventlog.Record{Subject: eventlog.Subject(f.tenant, eventlog.AggTransaction, txn), Type: events.TriggerAccepted,
		Tenant: f.tenant, Expect: true, Data: events.TriggerAcceptedData{TransactionID: txn, WorkflowID: "welcome",
			To: events.Target{SubscriberID: &sub}, Payload: json.RawMessage(`{}`)}}
}

// write appends records as a trigger would, then dies.
func (f *singleFixture) write(t *testing.T, recs ...eventlog.Record) {
	t.Helper()
	for _, rec := range recs {
		if _, err := f.h.Log().Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
}

// arm stores the run's first work message, as Arm does.
func (f *singleFixture) arm(t *testing.T, txn, sub string) string {
	t.Helper()
	runID := engine.RunID(f.tenant, txn, sub)
	if err := f.h.Log().Enqueue(context.Background(), eventlog.WorkRun(f.tenant, runID), []byte(txn), eventlog.NewID("test:")); err != nil {
		t.Fatal(err)
	}
	return runID
}

// history is the events of one aggregate, by type.
func (f *singleFixture) history(t *testing.T, agg, id string) []string {
	t.Helper()
	evs, err := f.h.Log().History(context.Background(), eventlog.Subject(f.tenant, agg, id), 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return types
}

// sends counts the delivery requests of a run.
func (f *singleFixture) sends(runID string) int {
	n := 0
	for _, r := range f.delivery.Requests() {
		if r["idempotencyKey"] == runID+":email" {
			n++
		}
	}
	return n
}

// waitUnqueued waits until no work message of runID is queued, failing
// naming what it waits for when it never happens.
func (f *singleFixture) waitUnqueued(t *testing.T, runID string, what string) {
	t.Helper()
	testwait.For(t, what, func() bool { return f.queued(t, runID) == 0 })
}

// queued counts the work messages of the run still on the WORK stream.
func (f *singleFixture) queued(t *testing.T, runID string) uint64 {
	t.Helper()
	ctx := context.Background()
	st, err := f.h.Log().JetStream().Stream(ctx, eventlog.WorkStream)
	if err != nil {
		t.Fatal(err)
	}
	subject := eventlog.WorkRun(f.tenant, runID)
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

// ledger is the transaction's ingress rows.
func (f *singleFixture) ledger(t *testing.T, txn string) []map[string]any {
	t.Helper()
	var rows struct{ Data []map[string]any }
	f.h.Do("GET", "/v1/notifications?transactionId="+txn, f.key, nil).JSON(t, &rows)
	return rows.Data
}

// done waits for the run to complete once: one send, its ingress row
// dispatched, and a repeat of the trigger answering the same run and
// sending nothing more.
func (f *singleFixture) done(t *testing.T, txn, sub, runID string) {
	t.Helper()
	run := f.h.WaitRun(f.key, runID, "completed", "failed")
	if run["status"] != "completed" || run["transactionId"] != txn {
		t.Fatalf("run: %v", run)
	}
	body := map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": sub}, "transactionId": txn}
	r := f.h.Do("POST", "/v1/events", f.key, body)
	var res struct{ Runs []map[string]any }
	r.JSON(t, &res)
	if r.Status != http.StatusAccepted || len(res.Runs) != 1 || res.Runs[0]["runId"] != runID || res.Runs[0]["status"] != "dispatched" {
		t.Fatalf("repeat: %d %s", r.Status, r.Body)
	}
	f.h.WaitRun(f.key, runID, "completed")
	time.Sleep(300 * time.Millisecond) // a second turn, had the repeat started one, would send now
	if n := f.sends(runID); n != 1 {
		t.Fatalf("%d sends of run %s", n, runID)
	}
	rows := f.ledger(t, txn)
	if len(rows) != 1 || rows[0]["status"] != "dispatched" || rows[0]["runId"] != runID || rows[0]["subscriberId"] != sub {
		t.Fatalf("ingress rows: %v", rows)
	}
}

// A trigger to one subscriber writes its TriggerAccepted and its run's
// RunStarted, and no fan-out bookkeeping; the ingress row the
// projections derive is dispatched with the run the answer named.
func TestSingleTriggerWritesNoFanoutBookkeeping(t *testing.T) {
	t.Parallel()
	f := startSingle(t)
	body := map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "u1"}, "transactionId": "t-plain"}
	r := f.h.Do("POST", "/v1/events", f.key, body)
	var res struct{ Runs []map[string]any }
	r.JSON(t, &res)
	if r.Status != http.StatusAccepted || len(res.Runs) != 1 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	runID := res.Runs[0]["runId"].(string)
	f.done(t, "t-plain", "u1", runID)
	if got := f.history(t, eventlog.AggTransaction, "t-plain"); len(got) != 1 || got[0] != events.TriggerAccepted {
		t.Fatalf("the transaction's events: %v", got)
	}
	if got := f.history(t, eventlog.AggRun, runID); got[0] != events.RunStarted {
		t.Fatalf("the run's events: %v", got)
	}
}

// Each point a crash can leave a single-subscriber trigger at, as the
// engine finds it (the writes made, the process that made them gone):
// a trigger accepted is finished once, one never accepted leaves nothing.
func TestSingleTriggerCrashPoints(t *testing.T) {
	t.Parallel()
	t.Run("after the work message", func(t *testing.T) {
		f := startSingle(t)
		runID := f.arm(t, "t-arm", "u1")
		// Its worker waits for the acceptance while the message is young...
		time.Sleep(singleAckWait / 4)
		if n := f.queued(t, runID); n != 1 {
			t.Fatalf("the work message of a trigger not yet accepted was dropped at once (%d queued)", n)
		}
		// ...then drops it: nothing was accepted, nothing starts.
		f.waitUnqueued(t, runID, "the work message of a trigger never accepted to leave the queue")
		if got := f.history(t, eventlog.AggRun, runID); len(got) != 0 {
			t.Fatalf("a run of a trigger never accepted: %v", got)
		}
		if rows := f.ledger(t, "t-arm"); len(rows) != 0 {
			t.Fatalf("ingress rows of a trigger never accepted: %v", rows)
		}
	})
	t.Run("after the work message, accepted later elsewhere", func(t *testing.T) {
		f := startSingle(t)
		runID := f.arm(t, "t-slow", "u1")
		time.Sleep(singleAckWait / 4)
		f.write(t, f.accepted("t-slow", "u1"))
		f.done(t, "t-slow", "u1", runID)
	})
	t.Run("after TriggerAccepted", func(t *testing.T) {
		f := startSingle(t)
		f.write(t, f.accepted("t-acc", "u1"))
		// The ingress row is received until the run starts.
		testwait.Until(t, "the accepted trigger's ingress row", func() error {
			if rows := f.ledger(t, "t-acc"); len(rows) != 1 || rows[0]["status"] != "received" {
				return fmt.Errorf("ingress rows of an accepted trigger: %v", rows)
			}
			return nil
		})
		runID := f.arm(t, "t-acc", "u1")
		f.done(t, "t-acc", "u1", runID)
		if got := f.history(t, eventlog.AggTransaction, "t-acc"); len(got) != 1 {
			t.Fatalf("the transaction's events: %v", got)
		}
	})
	t.Run("after RunStarted", func(t *testing.T) {
		f := startSingle(t)
		acc := f.accepted("t-run", "u1")
		runID := engine.RunID(f.tenant, "t-run", "u1")
		sub := "u1"
		f.write(t, acc, eventlog.Record{Subject: eventlog.Subject(f.tenant, eventlog.AggRun, runID), Type: events.RunStarted,
			Tenant: f.tenant, Expect: true, MsgID: runID + ":started",
			Data: events.RunStartedData{RunID: runID, TransactionID: "t-run", WorkflowID: "welcome", SubscriberID: &sub}})
		f.arm(t, "t-run", "u1")
		f.done(t, "t-run", "u1", runID)
	})
	t.Run("work of a subscriber the transaction does not name", func(t *testing.T) {
		f := startSingle(t)
		f.write(t, f.accepted("t-other", "u2"))
		runID := f.arm(t, "t-other", "u1")
		f.waitUnqueued(t, runID, "the work message of a run its transaction does not start to leave the queue")
		if got := f.history(t, eventlog.AggRun, runID); len(got) != 0 {
			t.Fatalf("a run its transaction does not start: %v", got)
		}
	})
}
