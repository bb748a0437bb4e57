package engine_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
)

// BenchmarkFanoutRuns measures runs/s end to end: one topic trigger to
// 10,000 subscribers, a one-`run`-step workflow, from the POST until every
// run is completed (read from the runs projection).
func BenchmarkFanoutRuns(b *testing.B) {
	const subscribers = 10000
	wf := bridge.MustWorkflow("ping", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "one", func(context.Context) (int, error) { return 1, nil })
		return err
	})
	d := testherald.NewStandInDelivery(b)
	h := testherald.Start(b, testherald.Options{DeliverURL: d.URL})
	tenant, key := h.Tenant("Bench")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	h.SeedTopic(tenant, "all", subscribers, "example.com")
	lastSeq = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "ping", "to": map[string]any{"topics": []string{"all"}}})
		if r.Status != http.StatusAccepted {
			b.Fatalf("trigger: %d %s", r.Status, r.Body)
		}
		fanout := time.Since(start)
		waitCompleted(b, h, tenant, subscribers)
		el := time.Since(start)
		b.ReportMetric(float64(subscribers)/el.Seconds(), "runs/s")
		b.ReportMetric(fanout.Seconds()*1000, "fanout-ms")
	}
}

// waitCompleted counts RunCompleted events of the tenant from the log
// until n arrived.
func waitCompleted(b *testing.B, h *testherald.Herald, tenant string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tail, err := h.Log().Tail(ctx, eventlog.TailOptions{After: lastSeq, Filters: []string{"ev." + tenant + ".run.>"}})
	if err != nil {
		b.Fatal(err)
	}
	defer tail.Stop()
	for done := 0; done < n; {
		evs, err := tail.Next(ctx, 4096)
		if err != nil {
			b.Fatalf("after %d completed: %v", done, err)
		}
		for _, ev := range evs {
			if ev.Type == events.RunCompleted {
				done++
			}
			lastSeq = max(lastSeq, ev.Seq)
		}
	}
}

// lastSeq is where the previous iteration's count stopped.
var lastSeq uint64
