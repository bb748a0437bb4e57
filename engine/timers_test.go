package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
)

// TestTimersResumeOnTheInstant: many runs whose delays end a few
// milliseconds apart each resume within a few milliseconds of their own
// instant. JetStream alone fires a population of schedules in batches at
// most every 250ms; the engine arms each durable timer early and holds the
// work in memory until the instant. Both ways are covered: a delay shorter
// than twice the lead is only held, a longer one fires early first.
func TestTimersResumeOnTheInstant(t *testing.T) {
	for _, delay := range []time.Duration{600 * time.Millisecond, 6 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			const runs = 20
			var mu sync.Mutex
			until := map[string]time.Time{}
			late := map[string]time.Duration{}
			done := make(chan struct{})
			wf := bridge.MustWorkflow("pause", func(ctx *bridge.Context, p struct{ N int }) error {
				// The instant is read only when the step is first
				// described; a recorded delay is not re-evaluated.
				at := time.Now().Add(delay + time.Duration(p.N)*10*time.Millisecond)
				if err := bridge.DelayUntil(ctx, "wait", at); err != nil {
					mu.Lock()
					if _, ok := until[ctx.RunID]; !ok {
						until[ctx.RunID] = at
					}
					mu.Unlock()
					return err
				}
				_, err := bridge.Run(ctx, "after", func(context.Context) (bool, error) {
					mu.Lock()
					defer mu.Unlock()
					if _, ok := late[ctx.RunID]; !ok {
						late[ctx.RunID] = time.Since(until[ctx.RunID])
						if len(late) == runs {
							close(done)
						}
					}
					return true, nil
				})
				return err
			})
			f := start(t, bridge.NewRegistry().MustRegister(wf))
			for i := range runs {
				one(t, f.trigger(t, map[string]any{"workflowId": "pause", "payload": map[string]any{"n": i},
					"to": map[string]any{"subscriberId": fmt.Sprintf("u%d", i)}}))
			}
			select {
			case <-done:
			case <-time.After(delay + 20*time.Second):
				t.Fatal("the runs did not all resume")
			}
			mu.Lock()
			defer mu.Unlock()
			var worst time.Duration
			for _, d := range late {
				if d < 0 {
					t.Errorf("a run resumed %v before its instant", -d)
				}
				worst = max(worst, d)
			}
			// Generous for a loaded CI machine and the race detector; the
			// batching of JetStream schedules alone is 250ms.
			if worst > 150*time.Millisecond {
				t.Errorf("the latest resume was %v after its instant", worst)
			}
			t.Logf("%d runs, delay %v: latest resume %v after its instant", runs, delay, worst)
		})
	}
}
