package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// gauge tracks how many callbacks run at once, and the most at once, and
// when each returned.
type gauge struct {
	mu        sync.Mutex
	now, most int
	calls     int
	returned  []time.Time
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
	g.returned = append(g.returned, time.Now())
}

// returnedBefore counts the callbacks that returned at or before at.
func (g *gauge) returnedBefore(at time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.returned {
		if !r.After(at) {
			n++
		}
	}
	return n
}

func (g *gauge) read() (now, most, calls int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.most, g.calls
}

// holding is workflow id whose one `run` step, counted by g, holds its
// Bridge call until unhold is called (or holdFor passes, a guard against
// a hang under the Bridge call timeout). Calling unhold at the test's
// return too lets the service stop at once when the test fails.
func (g *gauge) holding(id string, holdFor time.Duration) (wf *bridge.Workflow, unhold func()) {
	release := make(chan struct{})
	wf = bridge.MustWorkflow(id, func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "hold", func(context.Context) (int, error) {
			g.enter()
			defer g.leave()
			select {
			case <-release:
			case <-time.After(holdFor):
			}
			return 1, nil
		})
		return err
	})
	return wf, sync.OnceFunc(func() { close(release) })
}

// loadThenEmail is workflow id of the 2-step workload: a `run` step
// "load" whose output is name, then an email "Hello <name>".
func loadThenEmail(id, name string) *bridge.Workflow {
	return bridge.MustWorkflow(id, func(ctx *bridge.Context, _ any) error {
		loaded, err := bridge.Run(ctx, "load", func(context.Context) (string, error) { return name, nil })
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Hello " + loaded, Body: "b"}, nil
		})
		return err
	})
}

// The audit's finding 5: with 4 workers, one tenant's Bridge sleeping 8 s
// on 6 runs held every worker, and another tenant's 2 ms run took 15.6 s.
// With the default per-tenant cap (half the workers) the slow tenant
// advances 2 runs at once, its other 4 wait without taking a worker, and
// the other tenant's run completes while the slow tenant's calls are still
// held: here they return only once the fast run has completed (or after
// holdFor, a guard against a hang, under the Bridge call timeout). That is
// an order of events, not a duration, so load cannot break it. Without the
// cap the slow tenant holds all 4 workers, the fast run cannot complete
// until a slow call returns, and the test fails: no completion within
// holdFor, or a completion after a slow call returned; and the slow
// tenant ran 4 calls at once.
// Every slow run still completes, its callback run once.
func TestSlowTenantDoesNotDelayAnotherTenant(t *testing.T) {
	t.Parallel()
	const holdFor = 25 * time.Second
	var g gauge
	slowWF, unhold := g.holding("slow", holdFor)
	defer unhold()
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
	// Wait until the slow tenant's Bridge is as busy as the cap lets it
	// be (without the cap it gets busier) and every one of its 6 runs has
	// reached the engine: none waits on the server, all 6 are taken.
	g.waitTaken(t, h, 2, 6, holdFor)

	ctx, cancel := context.WithTimeout(context.Background(), holdFor)
	defer cancel()
	tail, err := h.Log().Tail(ctx, eventlog.TailOptions{Filters: []string{"ev." + fastTenant + ".run.>"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Stop()
	sent := time.Now()
	r := h.Do("POST", "/v1/events", fastKey, map[string]any{"workflowId": "fast", "to": map[string]any{"subscriberId": "f1"}})
	if r.Status != http.StatusAccepted {
		t.Fatalf("fast trigger: %d %s", r.Status, r.Body)
	}
	var completed time.Time
	for completed.IsZero() {
		evs, err := tail.Next(ctx, 64)
		if err != nil {
			t.Fatalf("the fast tenant's run did not complete while the slow tenant's calls were held: %v", err)
		}
		for _, ev := range evs {
			if ev.Type == events.RunCompleted {
				completed = ev.At
			}
		}
	}
	if n := g.returnedBefore(completed); n > 0 {
		t.Fatalf("the fast tenant's run completed %v after its trigger, after %d of the slow tenant's calls returned: it waited for a worker the slow tenant held",
			completed.Sub(sent), n)
	}
	t.Logf("the fast tenant's run completed %v after its trigger, no slow call returned meanwhile", completed.Sub(sent))
	unhold()
	if _, most, _ := g.read(); most > 2 {
		t.Fatalf("the slow tenant ran %d Bridge calls at once, want at most 2 (half of 4 workers)", most)
	}

	// The slow tenant's waiting runs are not lost: each completes, its
	// callback run once.
	for _, id := range slowRuns {
		h.WaitRun(slowKey, id, "completed")
	}
	if _, most, calls := g.read(); calls != 6 || most > 2 {
		t.Fatalf("slow callbacks: %d calls, %d at once; want 6 calls, at most 2 at once", calls, most)
	}
}

// waitTaken waits until g counts at least calls Bridge calls under way
// and every one of runs has reached the engine: none waits on the
// server, all are taken. The guard only ends a hang.
func (g *gauge) waitTaken(t *testing.T, h *testherald.Herald, calls, runs int, guard time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(guard); ; {
		now, _, _ := g.read()
		pending, taken := workBacklog(t, h)
		if now >= calls && pending == 0 && taken >= runs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held tenant's %d runs never all reached the engine: %d calls under way, %d messages pending, %d taken",
				runs, now, pending, taken)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// workBacklog sums, over the work consumers, the messages waiting on the
// server and those taken by a process (delivered, not yet acknowledged).
func workBacklog(t testing.TB, h *testherald.Herald) (pending, taken int) {
	t.Helper()
	r := h.Do("GET", "/metrics", "", nil)
	for _, line := range strings.Split(string(r.Body), "\n") {
		var into *int
		switch {
		case strings.HasPrefix(line, "herald_work_pending_messages{"):
			into = &pending
		case strings.HasPrefix(line, "herald_work_ack_pending_messages{"):
			into = &taken
		default:
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		*into += int(f)
	}
	return pending, taken
}

// HERALD_TENANT_CONCURRENCY sets the cap: at 1, a tenant's runs take one
// worker at a time, though three are free.
func TestTenantConcurrencySetting(t *testing.T) {
	t.Parallel()
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
		h.WaitRun(key, id, "completed")
	}
	if _, most, calls := g.read(); most != 1 || calls != 3 {
		t.Fatalf("%d calls, %d at once; want 3 calls, one at a time", calls, most)
	}
}

// A tenant whose backlog (a topic fan-out of 30 runs) is many times the
// workers cannot take them all: with 6 workers and
// HERALD_TENANT_CONCURRENCY=2 its Bridge never sees more than 2 calls at
// once, while another tenant's run (a `run` step, then an email to an
// SMTP server on loopback) completes and its message arrives, the noisy
// calls all still held. Counts and an order of events: no duration is
// compared.
func TestTenantOverItsCapLeavesWorkersToOthers(t *testing.T) {
	t.Parallel()
	const holdFor, noisyRuns, limit = 25 * time.Second, 30, 2
	var g gauge
	noisy, unhold := g.holding("noisy", holdFor)
	defer unhold()
	quiet := loadThenEmail("quiet", "Ada")
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_WORKERS": "6", "HERALD_TENANT_CONCURRENCY": strconv.Itoa(limit)}})
	noisyTenant, noisyKey := h.Tenant("Noisy")
	quietTenant, quietKey := h.Tenant("Quiet")
	h.MailChannel(quietKey, m.Port)
	h.Bridge(noisyKey, bridge.NewRegistry().MustRegister(noisy))
	h.Bridge(quietKey, bridge.NewRegistry().MustRegister(quiet))
	h.SeedTopic(noisyTenant, "all", noisyRuns, "example.com")
	h.SeedTopic(quietTenant, "one", 1, "example.com")

	if r := h.Do("POST", "/v1/events", noisyKey, map[string]any{"workflowId": "noisy", "to": map[string]any{"topics": []string{"all"}}}); r.Status != http.StatusAccepted {
		t.Fatalf("noisy trigger: %d %s", r.Status, r.Body)
	}
	g.waitTaken(t, h, limit, noisyRuns, holdFor)
	r := h.Do("POST", "/v1/events", quietKey, map[string]any{"workflowId": "quiet", "to": map[string]any{"subscriberId": "s0000000"}})
	if r.Status != http.StatusAccepted {
		t.Fatalf("quiet trigger: %d %s", r.Status, r.Body)
	}
	var res struct{ Runs []struct{ RunID string } }
	r.JSON(t, &res)
	run := h.WaitRunWithin(quietKey, res.Runs[0].RunID, holdFor, "completed", "failed")
	if run["status"] != "completed" || m.Accepted() != 1 {
		t.Fatalf("quiet run %v, %d messages", run, m.Accepted())
	}
	if n := g.returnedBefore(time.Now()); n > 0 {
		t.Fatalf("the quiet run completed only after %d noisy calls returned: it waited for a worker the noisy tenant held", n)
	}
	if _, most, calls := g.read(); most > limit || calls != limit {
		t.Fatalf("noisy calls: %d at most at once, %d begun while the quiet run went through; want at most %d, exactly %d", most, calls, limit, limit)
	}
	unhold()
}
