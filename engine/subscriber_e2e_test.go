package engine_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
)

// A subscriber edited between two steps of a run: every execute request
// of the run carries the subscriber as of the run's start, so a workflow
// that branches on it replays the same way and does not fail as
// non-deterministic.
func TestSubscriberFrozenAtRunStartE2E(t *testing.T) {
	var mu sync.Mutex
	var seen []bridge.Subscriber
	wf := bridge.MustWorkflow("plans", func(ctx *bridge.Context, _ any) error {
		mu.Lock()
		seen = append(seen, *ctx.Subscriber)
		mu.Unlock()
		plan, _ := ctx.Subscriber.Attributes["plan"].(string)
		// The step id depends on the subscriber: another subscriber on
		// replay would be another workflow.
		if _, err := bridge.Run(ctx, "greet-"+plan, func(context.Context) (string, error) { return plan, nil }); err != nil {
			return err
		}
		if _, _, err := bridge.WaitForEvent[any](ctx, "wait", "go", time.Hour); err != nil {
			return err
		}
		_, err := bridge.Run(ctx, "after", func(context.Context) (string, error) { return ctx.Subscriber.Locale, nil })
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	put := func(plan, locale string) {
		t.Helper()
		r := f.h.Do("PUT", "/v1/subscribers/u1", f.key, map[string]any{"locale": locale,
			"contacts": map[string]any{"email": []string{plan + "@example.com"}}, "attributes": map[string]any{"plan": plan}})
		if r.Status >= 300 {
			t.Fatalf("put subscriber: %d %s", r.Status, r.Body)
		}
	}
	put("pro", "fr")
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "plans", "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, 10*time.Second, "waiting")
	put("free", "de")
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "go"}); r.Status != http.StatusAccepted {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	run := f.h.WaitRun(f.key, runID, 10*time.Second, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("run: %v", run)
	}
	steps := run["steps"].([]any)
	if len(steps) != 3 || steps[0].(map[string]any)["stepId"] != "greet-pro" || steps[2].(map[string]any)["output"] != "fr" {
		t.Fatalf("steps %v", steps)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("the Bridge was called %d times", len(seen))
	}
	for i, s := range seen {
		if s.SubscriberID != "u1" || s.Locale != "fr" || s.Attributes["plan"] != "pro" || len(s.Contacts["email"]) != 1 || s.Contacts["email"][0] != "pro@example.com" {
			t.Fatalf("call %d saw subscriber %+v, want the one of the run's start", i, s)
		}
	}
}
