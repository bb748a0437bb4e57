package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
)

// gauge tracks how many callbacks run at once, and the most at once.
type gauge struct {
	mu        sync.Mutex
	now, most int
	calls     int
}

func (g *gauge) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now++
	g.calls++
	g.most = max(g.most, g.now)
}

func (g *gauge) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now--
}

func (g *gauge) read() (now, most, calls int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.most, g.calls
}

// The audit's finding 5: with 4 workers, one tenant's Bridge sleeping 8 s
// on 6 runs held every worker, and another tenant's 2 ms run took 15.6 s.
// With the default per-tenant cap (half the workers) the slow tenant
// advances 2 runs at once, its other 4 wait without taking a worker, and
// the other tenant's run completes within 100 ms of its trigger's answer.
// Every slow run still completes, its callback run once.
func TestSlowTenantDoesNotDelayAnotherTenant(t *testing.T) {
	const slow = 8 * time.Second
	var g gauge
	slowWF := bridge.MustWorkflow("slow", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "sleep", func(context.Context) (int, error) {
			g.enter()
			defer g.leave()
			time.Sleep(slow)
			return 1, nil
		})
		return err
	})
	fastWF := bridge.MustWorkflow("fast", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "quick", func(context.Context) (int, error) { return 1, nil })
		return err
	})
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL, Env: map[string]string{"HERALD_WORKERS": "4"}})
	_, slowKey := h.Tenant("Slow")
	fastTenant, fastKey := h.Tenant("Fast")
	h.Bridge(slowKey, bridge.NewRegistry().MustRegister(slowWF))
	h.Bridge(fastKey, bridge.NewRegistry().MustRegister(fastWF))

	var slowRuns []string
	for i := range 6 {
		r := h.Do("POST", "/v1/events", slowKey, map[string]any{"workflowId": "slow", "to": map[string]any{"subscriberId": fmt.Sprintf("s%d", i)}})
		if r.Status != http.StatusAccepted {
			t.Fatalf("slow trigger: %d %s", r.Status, r.Body)
		}
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		slowRuns = append(slowRuns, res.Runs[0].RunID)
	}
	// Wait until the slow tenant's Bridge is busy, and let its other runs
	// reach the engine.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if now, _, _ := g.read(); now > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow tenant's runs never reached its Bridge")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tail, err := h.Log().Tail(ctx, eventlog.TailOptions{Filters: []string{"ev." + fastTenant + ".run.>"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Stop()
	r := h.Do("POST", "/v1/events", fastKey, map[string]any{"workflowId": "fast", "to": map[string]any{"subscriberId": "f1"}})
	answered := time.Now()
	if r.Status != http.StatusAccepted {
		t.Fatalf("fast trigger: %d %s", r.Status, r.Body)
	}
	var completed time.Time
	for completed.IsZero() {
		evs, err := tail.Next(ctx, 64)
		if err != nil {
			t.Fatalf("the fast tenant's run did not complete: %v", err)
		}
		for _, ev := range evs {
			if ev.Type == events.RunCompleted {
				completed = ev.At
			}
		}
	}
	if took := completed.Sub(answered); took > 100*time.Millisecond {
		t.Fatalf("the fast tenant's run completed %v after its trigger's answer, want ≤ 100ms", took)
	} else {
		t.Logf("the fast tenant's run completed %v after its trigger's answer", took)
	}
	if _, most, _ := g.read(); most > 2 {
		t.Fatalf("the slow tenant ran %d Bridge calls at once, want at most 2 (half of 4 workers)", most)
	}

	// The slow tenant's waiting runs are not lost: each completes, its
	// callback run once.
	for _, id := range slowRuns {
		h.WaitRun(slowKey, id, 60*time.Second, "completed")
	}
	if _, most, calls := g.read(); calls != 6 || most > 2 {
		t.Fatalf("slow callbacks: %d calls, %d at once; want 6 calls, at most 2 at once", calls, most)
	}
}

// HERALD_TENANT_CONCURRENCY sets the cap: at 1, a tenant's runs take one
// worker at a time, though three are free.
func TestTenantConcurrencySetting(t *testing.T) {
	var g gauge
	wf := bridge.MustWorkflow("slow", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "sleep", func(context.Context) (int, error) {
			g.enter()
			defer g.leave()
			time.Sleep(500 * time.Millisecond)
			return 1, nil
		})
		return err
	})
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL,
		Env: map[string]string{"HERALD_WORKERS": "4", "HERALD_TENANT_CONCURRENCY": "1"}})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	var runs []string
	for i := range 3 {
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "slow", "to": map[string]any{"subscriberId": fmt.Sprintf("s%d", i)}})
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		runs = append(runs, res.Runs[0].RunID)
	}
	for _, id := range runs {
		h.WaitRun(key, id, 30*time.Second, "completed")
	}
	if _, most, calls := g.read(); most != 1 || calls != 3 {
		t.Fatalf("%d calls, %d at once; want 3 calls, one at a time", calls, most)
	}
}
