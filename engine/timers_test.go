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
// milliseconds apart each resume on their own instant, never before it.
// JetStream alone fires a population of schedules in batches at most every
// 250ms; the engine arms each durable timer early and holds the work in
// memory until the instant. Both ways are covered: a delay shorter than
// twice the lead is only held, a longer one fires early first.
//
// How late a resume is after its instant depends on the machine: on a busy
// one a worker, the run's state and the Bridge call all wait for the CPU,
// and no bound on that lateness holds under load. The test therefore
// checks that each run was resumed by the engine's own hold, released at
// its instant (TestHoldWakesAtTheInstant checks that release against the
// clock): the engine counts a run resumed from its hold in
// herald_timer_lateness_seconds, and a run resumed any other way (a turn
// that finds its instant passed, as one fired by a late JetStream batch
// does) is not counted. The count falls short of the runs, and the test
// fails, if the engine stops holding timers, if a durable timer is armed
// at the instant instead of early, or if it fires after the instant; a run
// resumed early fails it too. The lateness is logged.
func TestTimersResumeOnTheInstant(t *testing.T) {
	t.Parallel()
	// The short delay is longer than the time a loaded machine may take
	// between the Bridge describing the delay and the engine planning it,
	// and shorter than twice the lead (5s): it is only held.
	for _, delay := range []time.Duration{2 * time.Second, 6 * time.Second} {
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
			if held := metric(t, f.h, "herald_timer_lateness_seconds_count"); held != runs {
				t.Errorf("%v of %d runs resumed from a wake held to their instant", held, runs)
			}
			t.Logf("%d runs, delay %v: latest resume %v after its instant", runs, delay, worst)
		})
	}
}
