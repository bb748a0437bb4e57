package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

func TestSync(t *testing.T) {
	t.Parallel()
	daily := bridge.MustWorkflow("daily_digest", func(*bridge.Context, any) error { return nil }, bridge.WithSchedule("0 9 * * *"))
	welcome := bridge.MustWorkflow("welcome", func(*bridge.Context, any) error { return nil })
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL})
	_, key := h.Tenant("Acme")
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusConflict || r.ErrorCode() != "bridge_not_configured" {
		t.Fatalf("sync without bridge: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/v1/workflows", key, nil); r.Status != 200 || string(r.Body) != "{\"workflows\":[]}\n" {
		t.Fatalf("workflows before a sync: %d %s", r.Status, r.Body)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(daily, welcome))
	r := h.Do("POST", "/v1/sync", key, map[string]any{})
	if r.Status != 200 {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	var res struct {
		Workflows []struct {
			WorkflowID string
			Schedule   *string
			NextRunAt  *string
		}
	}
	r.JSON(t, &res)
	sort.Slice(res.Workflows, func(i, j int) bool { return res.Workflows[i].WorkflowID < res.Workflows[j].WorkflowID })
	if len(res.Workflows) != 2 || *res.Workflows[0].Schedule != "0 9 * * *" || res.Workflows[0].NextRunAt == nil ||
		!strings.HasSuffix(*res.Workflows[0].NextRunAt, ":00:00.000Z") || res.Workflows[1].Schedule != nil || res.Workflows[1].NextRunAt != nil {
		t.Fatalf("sync answer %s", r.Body)
	}
	if g := h.Do("GET", "/v1/workflows", key, nil); g.Status != 200 || !strings.Contains(string(g.Body), "daily_digest") {
		t.Fatalf("workflows: %d %s", g.Status, g.Body)
	}
	// A Bridge reporting an invalid id (or schedule) is refused and
	// records nothing.
	for _, bad := range []string{`{"workflows":[{"workflowId":"bad-id","schedule":null}]}`,
		`{"workflows":[{"workflowId":"ok","schedule":"every day"}]}`} {
		srv := signedStatic(t, bad)
		h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": srv.URL})
		r = h.Do("POST", "/v1/sync", key, nil)
		if r.Status != 422 || (r.ErrorCode() != "invalid_workflow_id" && r.ErrorCode() != "invalid_schedule") {
			t.Fatalf("bad discover %s: %d %s", bad, r.Status, r.Body)
		}
	}
	if g := h.Do("GET", "/v1/workflows", key, nil); !strings.Contains(string(g.Body), "daily_digest") {
		t.Fatalf("a refused sync changed the workflows: %s", g.Body)
	}
	// Unreachable and rejecting Bridges: 502.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": dead.URL})
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != 502 || r.ErrorCode() != "bridge_unreachable" {
		t.Fatalf("unreachable: %d %s", r.Status, r.Body)
	}
	rejecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }))
	defer rejecting.Close()
	h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": rejecting.URL})
	// The message names the Bridge's status (CONTRACT.md §5).
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != 502 || r.ErrorCode() != "bridge_rejected" || !strings.Contains(string(r.Body), `"bridge answered 401: signature mismatch`) {
		t.Fatalf("rejecting: %d %s", r.Status, r.Body)
	}
}

// signedStatic is a Bridge that answers every request with body (no
// signature check: it only serves discover in tests).
func signedStatic(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCronFiresAndResyncStopsIt(t *testing.T) {
	t.Parallel() // it waits on the clock
	var mu sync.Mutex
	beats := map[string]int{} // run → its beat's executions
	var nilSubscriber atomic.Bool
	nilSubscriber.Store(true)
	tickWF := func(schedule string) *bridge.Workflow {
		return bridge.MustWorkflow("heartbeat", func(ctx *bridge.Context, _ any) error {
			if ctx.Subscriber != nil {
				nilSubscriber.Store(false)
			}
			_, err := bridge.Run(ctx, "beat", func(context.Context) (bool, error) {
				mu.Lock()
				beats[ctx.RunID]++
				mu.Unlock()
				return true, nil
			})
			return err
		}, bridge.WithSchedule(schedule))
	}
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(tickWF("* * * * * *")))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != 200 {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(beats) }
	testwait.For(t, "3 ticks", func() bool { return count() >= 3 })
	if !nilSubscriber.Load() {
		t.Fatal("a cron run had a subscriber")
	}
	// A second sync with the same schedule does not double the ticks:
	// each instant's run runs its step once.
	h.Do("POST", "/v1/sync", key, nil)
	resynced := count()
	testwait.For(t, "3 ticks after the second sync", func() bool { return count() >= resynced+3 })
	mu.Lock()
	for run, n := range beats {
		if n != 1 {
			t.Errorf("run %s ran its beat %d times", run, n)
		}
	}
	mu.Unlock()
	// Re-sync without the schedule: no run starts for an instant after it.
	h.Bridge(key, bridge.NewRegistry().MustRegister(bridge.MustWorkflow("heartbeat", func(*bridge.Context, any) error { return nil })))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != 200 {
		t.Fatalf("re-sync: %d %s", r.Status, r.Body)
	}
	removed := time.Now()
	time.Sleep(2500 * time.Millisecond) // two instants and more that must not fire
	var page struct {
		Data []struct{ TransactionID string }
	}
	h.Do("GET", "/v1/runs?limit=500", key, nil).JSON(t, &page)
	if len(page.Data) < resynced+3 {
		t.Fatalf("%d runs listed, want at least %d", len(page.Data), resynced+3)
	}
	for _, r := range page.Data {
		at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(r.TransactionID, "cron:heartbeat:"))
		if err != nil {
			t.Fatalf("a run of transaction %q", r.TransactionID)
		}
		if at.After(removed.Add(time.Second)) {
			t.Errorf("schedule removed at %v, but a run started for %v", removed, at)
		}
	}
}

func digestWorkflow(window time.Duration) *bridge.Workflow {
	return bridge.MustWorkflow("comments", func(ctx *bridge.Context, _ any) error {
		res, err := bridge.Digest(ctx, "batch", window, bridge.DigestKey("post-1"))
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "summary", "email", func(context.Context) (bridge.SendContent, error) {
			var lines []string
			for _, ev := range res.Events {
				lines = append(lines, fmt.Sprint(ev.Payload["n"]))
			}
			return bridge.SendContent{Subject: fmt.Sprintf("%d new comments", res.Count), Body: strings.Join(lines, ",")}, nil
		})
		return err
	})
}

func checkDigest(t *testing.T, h *testherald.Herald, key string, d *testherald.StandInDelivery, runIDs []string, n int) {
	t.Helper()
	completed, digested := 0, 0
	for _, id := range runIDs {
		run := h.WaitRun(key, id, "completed", "digested", "failed")
		switch run["status"] {
		case "completed":
			completed++
		case "digested":
			digested++
		default:
			t.Fatalf("run %v", run)
		}
	}
	reqs := d.Requests()
	if completed != 1 || digested != n-1 || len(reqs) != 1 {
		t.Fatalf("%d completed, %d digested, %d deliveries", completed, digested, len(reqs))
	}
	content := reqs[0]["content"].(map[string]any)
	items := strings.Split(content["body"].(string), ",")
	seen := map[string]bool{}
	for _, it := range items {
		seen[it] = true
	}
	if content["subject"] != fmt.Sprintf("%d new comments", n) || len(items) != n || len(seen) != n {
		t.Fatalf("digest email %v", content)
	}
}

// TestDigestCollectsAWindow: 50 triggers for one digest key, all at once.
// Every run reaching the digest step while a window is open joins it, so
// the windows never overlap; each window ends in one send of all its
// events; every trigger is in exactly one window. On a quiet machine the
// 50 triggers all land in one 3 s window. Under load they may take longer
// than the window and fill two: the test therefore checks each window
// against its own bounds, read from the engine's clock in the digest
// result, never against the wall clock of the test. It fails if a run
// arriving in an open window opens another (the windows overlap), if a
// run joins a window after its end, if a trigger is lost or digested
// twice, or if a window's send does not carry exactly its events.
func TestDigestCollectsAWindow(t *testing.T) {
	t.Parallel()
	const n, window = 50, 3 * time.Second
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(digestWorkflow(window)))
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "comments",
				"to": map[string]any{"subscriberId": "author"}, "payload": map[string]any{"n": i}})
			var res struct{ Runs []struct{ RunID string } }
			json.Unmarshal(r.Body, &res)
			ids[i] = res.Runs[0].RunID
		}()
	}
	wg.Wait()

	// Each completed run opened a window: its digest step's output lists
	// the window's events, the opener's first, each with when it came.
	type event struct {
		Payload struct{ N int }
		RunID   string
		At      time.Time
	}
	var windows [][]event
	digested := 0
	for _, id := range ids {
		run := h.WaitRun(key, id, "completed", "digested", "failed")
		switch run["status"] {
		case "completed":
			raw, _ := json.Marshal(run["steps"].([]any)[0].(map[string]any)["output"])
			var res struct{ Events []event }
			if err := json.Unmarshal(raw, &res); err != nil || len(res.Events) == 0 || res.Events[0].RunID != id {
				t.Fatalf("run %s: digest output %s (%v)", id, raw, err)
			}
			windows = append(windows, res.Events)
		case "digested":
			digested++
		default:
			t.Fatalf("run %v", run)
		}
	}
	sort.Slice(windows, func(i, j int) bool { return windows[i][0].At.Before(windows[j][0].At) })
	seenN, seenRun := map[int]int{}, map[string]int{}
	var want []string
	for k, w := range windows {
		opened := w[0].At
		ends := opened.Add(window)
		if k > 0 && opened.Before(windows[k-1][0].At.Add(window)) {
			t.Errorf("window %d opened at %v, while window %d was open (until %v)", k, opened, k-1, windows[k-1][0].At.Add(window))
		}
		var lines []string
		for _, ev := range w {
			if ev.At.Before(opened) || !ev.At.Before(ends) {
				t.Errorf("window %d (%v to %v) holds a trigger that came at %v", k, opened, ends, ev.At)
			}
			seenN[ev.Payload.N]++
			seenRun[ev.RunID]++
			lines = append(lines, fmt.Sprint(ev.Payload.N))
		}
		want = append(want, fmt.Sprintf("%d new comments: %s", len(w), strings.Join(lines, ",")))
	}
	for i := range n {
		if seenN[i] != 1 || seenRun[ids[i]] != 1 {
			t.Errorf("trigger %d (run %s) is in %d windows", i, ids[i], seenRun[ids[i]])
		}
	}
	if digested != n-len(windows) {
		t.Errorf("%d runs digested, %d windows, of %d runs", digested, len(windows), n)
	}
	var got []string
	for _, r := range d.Requests() {
		c := r["content"].(map[string]any)
		got = append(got, fmt.Sprintf("%v: %v", c["subject"], c["body"]))
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sends:\n%s\nwant one per window:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	t.Logf("%d triggers in %d windows", n, len(windows))
}

func TestDigestWindowSurvivesARestart(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	const n = 10
	dir := t.TempDir()
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DataDir: dir, DeliverURL: d.URL})
	tenant, key := h.Tenant("Acme")
	reg := bridge.NewRegistry().MustRegister(digestWorkflow(10 * time.Second))
	h.Bridge(key, reg)
	var ids []string
	for i := range n {
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "comments",
			"to": map[string]any{"subscriberId": "author"}, "payload": map[string]any{"n": i}})
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		ids = append(ids, res.Runs[0].RunID)
	}
	// Stop while a window is open: a run sleeps until the window's end
	// (the others that joined it are digested).
	var sleeper string
	var windowEnds time.Time
	testwait.Until(t, "a window open", func() error {
		ended := 0
		for _, id := range ids {
			run := h.Do("GET", "/v1/runs/"+id, key, nil).Map(t)
			if run["status"] == "completed" || run["status"] == "digested" {
				ended++
			}
			if run["status"] != "sleeping" {
				continue
			}
			// The window's end is the until of the run's RunSleeping.
			evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, id), 0)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				var d events.RunSleepingData
				if ev.Type == events.RunSleeping && ev.Decode(&d) == nil && d.Type == "digest" {
					sleeper, windowEnds = id, d.Until
					return nil
				}
			}
			return fmt.Errorf("sleeping run %s has no RunSleeping", id)
		}
		if ended == len(ids) {
			return nil // every window closed before a poll saw it open: a machine this slow restarts after them
		}
		return errors.New("no run sleeps in a window")
	})
	if sleeper == "" {
		t.Log("every window had closed before the stop")
	}
	h.Stop()
	h = testherald.Start(t, testherald.Options{DataDir: dir, DeliverURL: d.URL})
	// Every run ends completed (it closed a window) or digested; the
	// windows' e-mails count every trigger once. How many windows there
	// were is the machine's pace: on a loaded one the first may close
	// before the last trigger.
	completed := 0
	for _, id := range ids {
		switch run := h.WaitRun(key, id, "completed", "digested", "failed"); run["status"] {
		case "completed":
			completed++
		case "digested":
		default:
			t.Fatalf("run %v", run)
		}
	}
	reqs, received := d.Requests(), d.ReceivedAt()
	if len(reqs) != completed {
		t.Fatalf("%d e-mails for %d windows", len(reqs), completed)
	}
	seen := map[string]bool{}
	for i, r := range reqs {
		for item := range strings.SplitSeq(r["content"].(map[string]any)["body"].(string), ",") {
			if seen[item] {
				t.Fatalf("trigger %s digested twice: %v", item, reqs)
			}
			seen[item] = true
		}
		// The window open at the stop closed at its end, not at the
		// restart.
		if r["idempotencyKey"] == sleeper+":summary" && received[i].Before(windowEnds) {
			t.Fatalf("the digest was sent at %v, before its window ended at %v", received[i], windowEnds)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d triggers digested: %v", len(seen), n, reqs)
	}
}

// A sync that drops workflows names them (a dry run first, which changes
// nothing); a removed workflow's unfinished run fails at its next turn
// with workflow_not_found, on the call to the Bridge, while a run of a
// workflow the new Bridge serves goes on. The Bridge is replaced by
// another one serving other workflows, as a tenant switching examples
// does.
func TestSyncRemovedWorkflowsRunsFailAtTheirNextTurn(t *testing.T) {
	t.Parallel()
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(waitingFor("keep", "go"), waitingFor("gone", "go"),
		bridge.MustWorkflow("gone_daily", func(*bridge.Context, any) error { return nil }, bridge.WithSchedule("0 9 * * *"))))
	type syncAnswer struct {
		Workflows []struct{ WorkflowID string }
		Removed   []string
	}
	sync := func(query string) (syncAnswer, string) {
		t.Helper()
		r := h.Do("POST", "/v1/sync"+query, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("sync%s: %d %s", query, r.Status, r.Body)
		}
		var a syncAnswer
		r.JSON(t, &a)
		var ids []string
		for _, w := range a.Workflows {
			ids = append(ids, w.WorkflowID)
		}
		sort.Strings(ids)
		return a, strings.Join(ids, ",")
	}
	listed := func() string {
		t.Helper()
		var a syncAnswer
		h.Do("GET", "/v1/workflows", key, nil).JSON(t, &a)
		var ids []string
		for _, w := range a.Workflows {
			ids = append(ids, w.WorkflowID)
		}
		sort.Strings(ids)
		return strings.Join(ids, ",")
	}
	if a, ids := sync(""); ids != "gone,gone_daily,keep" || a.Removed == nil || len(a.Removed) != 0 {
		t.Fatalf("first sync: %s removed %v", ids, a.Removed)
	}
	f := &fixture{h: h, key: key}
	runs := map[string]string{}
	for _, wf := range []string{"keep", "gone"} {
		runs[wf] = one(t, f.trigger(t, map[string]any{"workflowId": wf, "to": map[string]any{"subscriberId": "u1"}}))
		h.WaitRun(key, runs[wf], "waiting")
	}

	h.Bridge(key, bridge.NewRegistry().MustRegister(waitingFor("keep", "go"), waitingFor("fresh", "go")))
	if r := h.Do("POST", "/v1/sync?dryRun=maybe", key, nil); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "validation_failed" {
		t.Fatalf("dryRun=maybe: %d %s", r.Status, r.Body)
	}
	if a, ids := sync("?dryRun=true"); ids != "fresh,keep" || strings.Join(a.Removed, ",") != "gone,gone_daily" {
		t.Fatalf("dry run: %s removed %v", ids, a.Removed)
	}
	if got := listed(); got != "gone,gone_daily,keep" {
		t.Fatalf("a dry run changed the workflows: %s", got)
	}
	if a, ids := sync(""); ids != "fresh,keep" || strings.Join(a.Removed, ",") != "gone,gone_daily" {
		t.Fatalf("sync: %s removed %v", ids, a.Removed)
	}
	if got := listed(); got != "fresh,keep" {
		t.Fatalf("workflows after the sync: %s", got)
	}

	// The runs' next turn: the signal each waits for.
	for _, runID := range runs {
		if r := h.Do("POST", "/v1/events/"+runID+"/signal", key, map[string]any{"event": "go"}); r.Status != http.StatusAccepted {
			t.Fatalf("signal: %d %s", r.Status, r.Body)
		}
	}
	if run := h.WaitRun(key, runs["keep"], "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("the kept workflow's run: %v", run)
	}
	run := h.WaitRun(key, runs["gone"], "completed", "failed")
	steps, _ := run["steps"].([]any)
	if run["status"] != "failed" || run["error"].(map[string]any)["code"] != "workflow_not_found" || len(steps) != 2 {
		t.Fatalf("the removed workflow's run: %v", run)
	}
	if wait, call := steps[0].(map[string]any), steps[1].(map[string]any); wait["stepId"] != "wait" || wait["status"] != "completed" ||
		call["stepId"] != "bridge" || call["type"] != "bridge" || call["status"] != "failed" {
		t.Fatalf("the removed workflow's run's steps: %v", steps)
	}
	if a, _ := sync(""); len(a.Removed) != 0 {
		t.Fatalf("a sync dropping nothing removed %v", a.Removed)
	}
}
