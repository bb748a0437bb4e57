package engine_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
)

// eraseSleep is the delay of the run TestEraseCancelsTheSubscribersRuns
// erases while it sleeps.
const eraseSleep = 5 * time.Second

// Erasing a subscriber cancels its unfinished runs, a waiting one and a
// sleeping one: each ends cancelled with the reason, and neither calls
// the Bridge again or sends.
//
// The sleeping run must still sleep when the erase comes: eraseSleep is
// far longer than the time from seeing it asleep to the erase's answer,
// even on a loaded machine (with one second, a run woke first and sent,
// under load). What the test counts as "after" starts at the erase's
// answer.
func TestEraseCancelsTheSubscribersRuns(t *testing.T) {
	t.Parallel()
	var calls counter
	send := func(ctx *bridge.Context) error {
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "s", Body: "b"}, nil
		})
		return err
	}
	waits := bridge.MustWorkflow("waits", func(ctx *bridge.Context, _ any) error {
		calls.inc(ctx.RunID)
		if _, _, err := bridge.WaitForEvent[any](ctx, "decision", "approved", time.Hour); err != nil {
			return err
		}
		return send(ctx)
	})
	sleeps := bridge.MustWorkflow("sleeps", func(ctx *bridge.Context, _ any) error {
		calls.inc(ctx.RunID)
		if err := bridge.Delay(ctx, "pause", eraseSleep); err != nil {
			return err
		}
		return send(ctx)
	})
	f := start(t, bridge.NewRegistry().MustRegister(waits).MustRegister(sleeps))
	for _, id := range []string{"u1", "u2"} {
		if r := f.h.Do("PUT", "/v1/subscribers/"+id, f.key, map[string]any{
			"contacts": map[string]any{"email": []string{id + "@example.com"}}}); r.Status >= 300 {
			t.Fatalf("subscriber: %d %s", r.Status, r.Body)
		}
	}
	to := func(id string) map[string]any { return map[string]any{"subscriberId": id} }
	waiting := one(t, f.trigger(t, map[string]any{"workflowId": "waits", "to": to("u1")}))
	sleeping := one(t, f.trigger(t, map[string]any{"workflowId": "sleeps", "to": to("u1")}))
	f.h.WaitRun(f.key, waiting, "waiting")
	f.h.WaitRun(f.key, sleeping, "sleeping")

	if r := f.h.Do("DELETE", "/v1/subscribers/u1?erase=true", f.key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	before := map[string]int{waiting: calls.get(waiting), sleeping: calls.get(sleeping)}
	for _, runID := range []string{waiting, sleeping} {
		// Cancelled by the time the erase answers.
		r := f.h.Do("GET", "/v1/runs/"+runID, f.key, nil)
		run := r.Map(t)
		runErr, _ := run["error"].(map[string]any)
		if run["status"] != "cancelled" || runErr["code"] != "cancelled" || !strings.Contains(runErr["message"].(string), "erased") {
			t.Fatalf("run %s after the erase: %v", runID, run)
		}
	}
	if r := f.h.Do("POST", "/v1/events/"+waiting+"/signal", f.key, map[string]any{"event": "approved"}); r.Status != http.StatusConflict || r.ErrorCode() != "run_finished" {
		t.Fatalf("signal to the erased subscriber's run: %d %s", r.Status, r.Body)
	}

	// A run of another subscriber that sleeps as long, started after the
	// erase, wakes after the cancelled one would have: once it has sent,
	// the cancelled run has had every chance to.
	later := one(t, f.trigger(t, map[string]any{"workflowId": "sleeps", "to": to("u2")}))
	if run := f.h.WaitRun(f.key, later, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("the other subscriber's run: %v", run)
	}
	for runID, n := range before {
		if got := calls.get(runID); got != n {
			t.Errorf("run %s called the Bridge %d times after the erase", runID, got-n)
		}
	}
	for _, req := range f.delivery.Requests() {
		key, _ := req["idempotencyKey"].(string)
		if !strings.HasPrefix(key, later+":") {
			t.Errorf("a send after the erase: %v", req)
		}
	}
	if n := len(f.delivery.Requests()); n != 1 {
		t.Errorf("%d sends, want the other subscriber's one", n)
	}
}
