package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// A tenant's broadcast backlog far past the parked bound (300 runs, each
// Bridge call 50 ms, two at once; at most 20 messages parked) does not
// hold back another tenant's single trigger: it completes while most of
// the broadcast is still to run. Before the bulk lane, the trigger's work
// waited on the server behind the whole backlog once 20 were parked.
func TestABroadcastBacklogDoesNotHoldAnotherTenantsTrigger(t *testing.T) {
	t.Parallel()
	const n = 300
	h, _, tenant, key := flowHeraldWith(t, testherald.Options{Tune: func(c *service.Config) {
		c.FanoutChunk, c.BroadcastThreshold = 100, 100
		c.TenantConcurrency, c.MaxParked = 2, 20
	}})
	slow := bridge.MustWorkflow("slow", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "work", func(context.Context) (bool, error) {
			time.Sleep(50 * time.Millisecond)
			return true, nil
		})
		return err
	})
	h.Bridge(key, bridge.NewRegistry().MustRegister(slow))
	h.SeedTopic(tenant, "all", n, "example.com")

	_, other := h.Tenant("Other")
	quick := bridge.MustWorkflow("quick", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "work", func(context.Context) (bool, error) { return true, nil })
		return err
	})
	h.Bridge(other, bridge.NewRegistry().MustRegister(quick))
	if r := h.Do("PUT", "/v1/subscribers/v1", other, map[string]any{}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}

	if r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "slow", "to": map[string]any{"topics": []string{"all"}},
		"transactionId": "backlog"}); r.Status != http.StatusAccepted {
		t.Fatalf("broadcast: %d %s", r.Status, r.Body)
	}
	// The whole backlog is enqueued before the other tenant's trigger.
	testwait.Until(t, "the broadcast fanned out", func() error {
		if p := progress(t, h, key, "backlog"); p.Runs.Started != n {
			return fmt.Errorf("%d runs started", p.Runs.Started)
		}
		return nil
	})
	var res struct{ Runs []struct{ RunID string } }
	r := h.Do("POST", "/v1/events", other, map[string]any{"workflowId": "quick", "to": map[string]any{"subscriberId": "v1"}})
	if r.JSON(t, &res); r.Status != http.StatusAccepted || len(res.Runs) != 1 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	if run := h.WaitRun(other, res.Runs[0].RunID, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("the other tenant's run: %v", run)
	}
	if p := progress(t, h, key, "backlog"); p.Runs.Completed > n/2 {
		t.Fatalf("the other tenant's run completed after %d of the broadcast's %d runs", p.Runs.Completed, n)
	}
}
