package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/internal/testherald"
)

// A digest window takes joined payloads up to MaxDigestJoinedBytes: 17
// runs of 250 KB each make windows of 5 (the opener and 4 joined), all
// completing, every payload digested once. On main the one window's
// output (4.25 MB) was refused by the event log forever and its run never
// finished.
func TestDigestAggregateIsBounded(t *testing.T) {
	const n, size = 17, 250_000
	wf := bridge.MustWorkflow("big", func(ctx *bridge.Context, _ any) error {
		res, err := bridge.Digest(ctx, "batch", 4*time.Second)
		if err != nil {
			return err
		}
		_, err = bridge.Run(ctx, "count", func(context.Context) (int, error) { return res.Count, nil })
		return err
	})
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	f := &fixture{h: h, key: key}
	blob := strings.Repeat("b", size)
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = one(t, f.trigger(t, map[string]any{"workflowId": "big", "to": map[string]any{"subscriberId": "author"},
				"payload": map[string]any{"blob": blob}}))
		}()
	}
	wg.Wait()
	total, windows := 0, 0
	for _, id := range ids {
		run := h.WaitRun(key, id, 60*time.Second, "completed", "digested", "failed")
		switch run["status"] {
		case "completed":
			steps := run["steps"].([]any)
			count := int(steps[1].(map[string]any)["output"].(float64))
			if count > 1+engine.MaxDigestJoinedBytes/size {
				t.Errorf("a window of %d payloads of %d bytes", count, size)
			}
			total += count
			windows++
		case "digested":
		default:
			t.Fatalf("run %.300v", run)
		}
	}
	if total != n || windows < 4 {
		t.Fatalf("%d payloads digested in %d windows, want %d in at least 4", total, windows, n)
	}
}
