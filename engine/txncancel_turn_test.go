package engine_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testwait"
)

// A run whose transaction is cancelled while it sleeps, with no sweep to
// end it (the TransactionCancelled appended alone), ends cancelled at its
// next turn before calling the Bridge: nothing is sent, and the run names
// the cancel's actor.
func TestATurnOfACancelledTransactionEndsItsRun(t *testing.T) {
	t.Parallel()
	var after atomic.Int32 // Bridge calls past the delay
	wf := bridge.MustWorkflow("later", func(ctx *bridge.Context, _ any) error {
		if err := bridge.Delay(ctx, "pause", 2*time.Second); err != nil {
			return err
		}
		after.Add(1)
		_, err := bridge.Send(ctx, "mail", "email", mail("later"))
		return err
	})
	h, m, tenant, key := flowHerald(t, nil)
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	var res struct{ Runs []struct{ RunID string } }
	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "later", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "t-later"})
	if r.JSON(t, &res); r.Status != http.StatusAccepted || len(res.Runs) != 1 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	runID := res.Runs[0].RunID
	if run := h.WaitRun(key, runID, "sleeping", "completed", "failed"); run["status"] != "sleeping" {
		t.Fatalf("run: %v", run)
	}
	if _, err := h.Log().Append(context.Background(), eventlog.Record{
		Subject: eventlog.Subject(tenant, eventlog.AggTransaction, "t-later"), Type: events.TransactionCancelled,
		Tenant: tenant, Data: events.TransactionCancelledData{TransactionID: "t-later", Actor: "hk_test"}}); err != nil {
		t.Fatal(err)
	}
	run := h.WaitRun(key, runID, "cancelled", "completed", "failed")
	if run["status"] != "cancelled" {
		t.Fatalf("run: %v", run)
	}
	testwait.Until(t, "the run's end on record", func() error {
		evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
		if err != nil {
			return err
		}
		var d events.RunCancelledData
		if last := evs[len(evs)-1]; last.Type != events.RunCancelled || last.Decode(&d) != nil ||
			d.Reason != events.CancelTransaction || d.Actor != "hk_test" {
			t.Fatalf("the run's last event: %s %s", last.Type, last.Data)
		}
		return nil
	})
	if n := after.Load(); n != 0 || len(m.Messages()) != 0 {
		t.Fatalf("%d Bridge calls past the delay, %d emails", n, len(m.Messages()))
	}
}
