package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// resumeFixture is a service whose Bridge can be told to drop a request
// unanswered, with the tenant id to read the run's events by.
type resumeFixture struct {
	h      *testherald.Herald
	tenant string
	key    string
	// drop, when it returns true for a request body, closes the
	// connection without an answer.
	drop func(body []byte) bool
}

func startResume(t *testing.T, reg *bridge.Registry) *resumeFixture {
	t.Helper()
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	f := &resumeFixture{h: h, drop: func([]byte) bool { return false }}
	f.tenant, f.key = h.Tenant("Acme")
	var serve atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if f.drop(body) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		(*serve.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	resp := h.Do("PUT", "/v1/bridge", f.key, map[string]string{"webhookUrl": srv.URL})
	if resp.Status != http.StatusOK {
		t.Fatalf("PUT /v1/bridge: %d %s", resp.Status, resp.Body)
	}
	var b struct{ SigningSecret string }
	resp.JSON(t, &b)
	hd := bridge.Serve(reg, bridge.Options{SigningKey: b.SigningSecret})
	serve.Store(&hd)
	return f
}

// history is the run's events, oldest first.
func (f *resumeFixture) history(t *testing.T, runID string) []eventlog.Event {
	t.Helper()
	evs, err := f.h.Log().History(context.Background(), eventlog.Subject(f.tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// completions counts the run's StepCompleted events of stepID.
func completions(t *testing.T, evs []eventlog.Event, stepID string) int {
	t.Helper()
	n := 0
	for _, ev := range evs {
		if ev.Type != events.StepCompleted {
			continue
		}
		var d events.StepCompletedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if d.StepID == stepID {
			n++
		}
	}
	return n
}

// metric reads one unlabelled metric from GET /metrics.
func metric(t *testing.T, h *testherald.Herald, name string) float64 {
	t.Helper()
	r := h.Do("GET", "/metrics", "", nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("GET /metrics has no %s", name)
	return 0
}

// pauseThen is a workflow that sleeps 300ms then runs after.
func pauseThen(after func(runID string)) *bridge.Workflow {
	return bridge.MustWorkflow("pause", func(ctx *bridge.Context, _ any) error {
		if err := bridge.Delay(ctx, "wait", 300*time.Millisecond); err != nil {
			return err
		}
		_, err := bridge.Run(ctx, "after", func(context.Context) (bool, error) {
			after(ctx.RunID)
			return true, nil
		})
		return err
	})
}

// TestResumeCallsTheBridgeBeforeRecordingTheDelaysEnd: a woken run's
// workflow resumes one append sooner. When the Bridge runs the step after
// the delay, the log still ends with the run going to sleep; the delay's
// end is recorded right after, once.
func TestResumeCallsTheBridgeBeforeRecordingTheDelaysEnd(t *testing.T) {
	t.Parallel()
	var f *resumeFixture
	var mu sync.Mutex
	var lastType []string
	f = startResume(t, bridge.NewRegistry().MustRegister(pauseThen(func(runID string) {
		ev, _, err := f.h.Log().Last(context.Background(), eventlog.Subject(f.tenant, eventlog.AggRun, runID))
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			lastType = append(lastType, err.Error())
			return
		}
		lastType = append(lastType, ev.Type)
	})))
	// On a loaded machine the turn that puts the run to sleep can outlast
	// its 300 ms delay: the run then resumes in that turn, not from its
	// timer, and has nothing to step aside from. Such a run says nothing
	// of a wake (herald_timer_lateness_seconds counts the woken turns), so
	// another is tried, up to five.
	for try := 1; ; try++ {
		woken0, aside0 := metric(t, f.h, "herald_timer_lateness_seconds_count"), metric(t, f.h, "herald_turns_stepped_aside_total")
		mu.Lock()
		lastType = nil
		mu.Unlock()
		runID := one(t, (&fixture{h: f.h, key: f.key}).trigger(t, map[string]any{"workflowId": "pause",
			"to": map[string]any{"subscriberId": fmt.Sprintf("u%d", try)}}))
		f.h.WaitRun(f.key, runID, "completed")
		mu.Lock()
		got := lastType
		mu.Unlock()
		if len(got) != 1 || got[0] != events.RunSleeping {
			t.Fatalf("when the step after the delay ran, the run's last events were %v; want [%s]", got, events.RunSleeping)
		}
		evs := f.history(t, runID)
		if n := completions(t, evs, "wait"); n != 1 {
			t.Fatalf("the delay was recorded as completed %d times", n)
		}
		if last := evs[len(evs)-1]; last.Type != events.RunCompleted {
			t.Fatalf("last event %s", last.Type)
		}
		woken := metric(t, f.h, "herald_timer_lateness_seconds_count") - woken0
		if woken == 0 && try < 5 {
			continue
		}
		// Even a run woken alone puts off recording its answer: the
		// worker is free for the next due run at once.
		if aside := metric(t, f.h, "herald_turns_stepped_aside_total") - aside0; woken != 1 || aside != 1 {
			t.Fatalf("%v turns woken by their timer, %v stepped aside; want 1 and 1", woken, aside)
		}
		return
	}
}

// TestResumeSurvivesABridgeCallLost: the Bridge call a resume leads to
// gets no answer. Nothing of the resume was recorded, so the run resumes
// again and completes; the delay's end and the step after it are each
// recorded once.
func TestResumeSurvivesABridgeCallLost(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	f := startResume(t, bridge.NewRegistry().MustRegister(pauseThen(func(string) { ran.Add(1) })))
	var dropped atomic.Bool
	f.drop = func(body []byte) bool {
		var req wire.ExecuteRequest
		if json.Unmarshal(body, &req) != nil || len(req.Steps) == 0 {
			return false
		}
		return dropped.CompareAndSwap(false, true)
	}
	runID := one(t, (&fixture{h: f.h, key: f.key}).trigger(t, map[string]any{"workflowId": "pause", "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, "completed")
	if !dropped.Load() {
		t.Fatal("no Bridge call after the delay was dropped")
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the step after the delay ran %d times", n)
	}
	evs := f.history(t, runID)
	if n := completions(t, evs, "wait"); n != 1 {
		t.Fatalf("the delay was recorded as completed %d times", n)
	}
	if n := completions(t, evs, "after"); n != 1 {
		t.Fatalf("the step after the delay was recorded %d times", n)
	}
}

// burst is a workflow whose runs all sleep until the instant in their
// payload, then run one step that takes a moment; it counts that step's
// executions by run. A run that describes its delay less than burstLead
// before that instant (the fan-out of its trigger took that long, on a
// busy machine) sleeps burstLead instead, so that every run sleeps and
// wakes from its timer: on a quiet machine all wake on the one instant, on
// a busy one the late ones a little after it, while the others still wake.
type burst struct {
	mu  sync.Mutex
	ran map[string]int
}

const burstRuns = 300

// burstLead is the least time a run of burst sleeps: longer than a busy
// machine takes between the Bridge describing the delay and the engine
// planning it, so that the run is asleep before its instant.
const burstLead = 4 * time.Second

func (b *burst) workflow() *bridge.Workflow {
	b.ran = map[string]int{}
	return bridge.MustWorkflow("burst", func(ctx *bridge.Context, p struct{ At time.Time }) error {
		// The instant is read only when the step is first described.
		at := p.At
		if soon := time.Now().Add(burstLead); at.Before(soon) {
			at = soon
		}
		if err := bridge.DelayUntil(ctx, "wait", at); err != nil {
			return err
		}
		_, err := bridge.Run(ctx, "after", func(context.Context) (bool, error) {
			time.Sleep(2 * time.Millisecond)
			b.mu.Lock()
			defer b.mu.Unlock()
			b.ran[ctx.RunID]++
			return true, nil
		})
		return err
	})
}

// start seeds burstRuns subscribers and triggers a run for each, due 6s
// from now (2s more than burstLead: a quiet machine has every run asleep
// by then); it returns the instant.
func (b *burst) start(t *testing.T, h *testherald.Herald, tenant, key string) time.Time {
	t.Helper()
	h.SeedTopic(tenant, "all", burstRuns, "example.com")
	at := time.Now().Add(6 * time.Second).UTC()
	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "burst",
		"to": map[string]any{"topics": []string{"all"}}, "payload": map[string]any{"at": at}})
	if r.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	return at
}

// resumed is how many runs ran the step after the delay.
func (b *burst) resumed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ran)
}

// wait waits until every run ran the step after the delay, checks each
// ran it once, and returns the runs.
func (b *burst) wait(t *testing.T) []string {
	t.Helper()
	testwait.Until(t, "every run past its delay", func() error {
		if n := b.resumed(); n < burstRuns {
			return fmt.Errorf("%d of %d runs ran the step after the delay", n, burstRuns)
		}
		return nil
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, burstRuns)
	for id, n := range b.ran {
		if n != 1 {
			t.Errorf("run %s ran the step after the delay %d times", id, n)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestBurstOfWakesStepsAsideAndRecordsEveryAnswerOnce: hundreds of runs
// whose delays end on the same instant. Woken turns put off recording
// their Bridge answers (the metric counts them), and every answer is
// still recorded once: each run completes with its delay's end and the
// step after it recorded once, the step run once. Every run sleeps
// (see burst), so every one of the 300 turns wakes from its timer (the
// lateness metric counts them) and steps aside: the test fails if a woken
// turn records its answer at once, or records it twice or never.
func TestBurstOfWakesStepsAsideAndRecordsEveryAnswerOnce(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	var b burst
	f := startResume(t, bridge.NewRegistry().MustRegister(b.workflow()))
	b.start(t, f.h, f.tenant, f.key)
	for _, id := range b.wait(t) {
		f.h.WaitRun(f.key, id, "completed")
		evs := f.history(t, id)
		if w, a := completions(t, evs, "wait"), completions(t, evs, "after"); w != 1 || a != 1 {
			t.Fatalf("run %s recorded the delay's end %d times and the step after %d times", id, w, a)
		}
	}
	woke, aside := metric(t, f.h, "herald_timer_lateness_seconds_count"), metric(t, f.h, "herald_turns_stepped_aside_total")
	if aside != woke {
		t.Fatalf("%v of %v woken turns stepped aside", aside, woke)
	}
	if woke != burstRuns {
		t.Fatalf("%v of %d runs woke from their timer", woke, burstRuns)
	}
}

// TestStopMidBurstRunsEveryStepOnce: the service stops while hundreds of
// runs resume from one instant, and starts again on the same data. The
// turns under way finish their step, the answers of turns that stepped
// aside are recorded before the engine returns, and the new process
// finishes the rest: every run completes, the step after the delay ran
// once for each.
func TestStopMidBurstRunsEveryStepOnce(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	var b burst
	wf := b.workflow()
	opts := testherald.Options{DataDir: t.TempDir(), DeliverURL: testherald.NewStandInDelivery(t).URL, AckWait: 9 * time.Second}
	h := testherald.Start(t, opts)
	tenant, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	at := b.start(t, h, tenant, key)
	time.Sleep(time.Until(at) + 30*time.Millisecond)
	h.Stop()
	before := b.resumed()

	h2 := testherald.Start(t, opts)
	for _, id := range b.wait(t) {
		h2.WaitRun(key, id, "completed")
	}
	t.Logf("%d of %d runs had resumed when the first process stopped", before, burstRuns)
}
