package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// capped counts its runs at a throttle step (limit, window, key "orders")
// and e-mails the subscriber only when the run is not throttled; the
// subject of the e-mail is the run id.
func capped(limit int, window time.Duration) *bridge.Registry {
	return bridge.NewRegistry().MustRegister(bridge.MustWorkflow("capped", func(ctx *bridge.Context, _ any) error {
		th, err := bridge.Throttle(ctx, "cap", limit, window, bridge.ThrottleKey("orders"))
		if err != nil || th.Throttled {
			return err
		}
		_, err = bridge.Send(ctx, "mail", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: ctx.RunID, Body: "your order"}, nil
		})
		return err
	}))
}

// throttleWorld is a service with an SMTP sink, a tenant, its subscriber
// u1 and its Bridge serving capped.
type throttleWorld struct {
	h    *testherald.Herald
	key  string
	mail *testsmtp.Server
}

func newThrottleWorld(t *testing.T, limit int, window time.Duration, opts testherald.Options) *throttleWorld {
	t.Helper()
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, opts)
	_, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status/100 != 2 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	h.Bridge(key, capped(limit, window))
	return &throttleWorld{h: h, key: key, mail: m}
}

// trigger starts capped for u1 through h and returns the run id.
func (w *throttleWorld) trigger(t *testing.T, h *testherald.Herald) string {
	t.Helper()
	f := &fixture{h: h, key: w.key}
	return one(t, f.trigger(t, map[string]any{"workflowId": "capped", "to": map[string]any{"subscriberId": "u1"}}))
}

// counted waits until the run completed and returns its throttle step's
// output.
func counted(t *testing.T, h *testherald.Herald, key, runID string) (count int, throttled bool) {
	t.Helper()
	run := h.WaitRun(key, runID, "completed", "failed")
	steps, _ := run["steps"].([]any)
	if run["status"] != "completed" || len(steps) == 0 {
		t.Fatalf("run %s: %v", runID, run)
	}
	step := steps[0].(map[string]any)
	out, _ := step["output"].(map[string]any)
	c, ok1 := out["count"].(float64)
	th, ok2 := out["throttled"].(bool)
	if step["stepId"] != "cap" || step["type"] != "throttle" || !ok1 || !ok2 {
		t.Fatalf("run %s: throttle step %v", runID, step)
	}
	wantSteps := 1
	if !th {
		wantSteps = 2
	}
	if len(steps) != wantSteps {
		t.Fatalf("run %s (throttled %v): steps %v", runID, th, steps)
	}
	return int(c), th
}

// mailed counts the messages received for each run (its id is their
// subject).
func mailed(m *testsmtp.Server) map[string]int {
	out := map[string]int{}
	for _, msg := range m.Messages() {
		for _, line := range strings.Split(string(msg.Data), "\r\n") {
			if s, ok := strings.CutPrefix(line, "Subject: "); ok {
				out[s]++
			}
		}
	}
	return out
}

// waitMailed waits until n messages arrived (and a little more for any
// extra one), and returns them by run.
func waitMailed(t *testing.T, m *testsmtp.Server, n int) map[string]int {
	t.Helper()
	testwait.Until(t, "the messages", func() error {
		if got := m.Accepted(); got < n {
			return fmt.Errorf("%d messages, want %d", got, n)
		}
		return nil
	})
	return mailed(m)
}

// Five triggers of one subscriber with limit 3 count 1 to 5; the last two
// are throttled and send nothing, the first three e-mail once each.
func TestThrottleCountsFiveTriggersE2E(t *testing.T) {
	t.Parallel()
	w := newThrottleWorld(t, 3, time.Hour, testherald.Options{})
	var runs []string
	for i := 1; i <= 5; i++ {
		runID := w.trigger(t, w.h)
		count, throttled := counted(t, w.h, w.key, runID)
		if count != i || throttled != (i > 3) {
			t.Fatalf("trigger %d: count %d throttled %v", i, count, throttled)
		}
		runs = append(runs, runID)
	}
	got := waitMailed(t, w.mail, 3)
	if len(got) != 3 || got[runs[0]] != 1 || got[runs[1]] != 1 || got[runs[2]] != 1 {
		t.Fatalf("messages by run %v, runs %v", got, runs)
	}
	// Another subscriber, and another key, count on their own.
	if r := w.h.Do("PUT", "/v1/subscribers/u2", w.key, map[string]any{"contacts": map[string]any{"email": []string{"u2@example.com"}}}); r.Status/100 != 2 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	f := &fixture{h: w.h, key: w.key}
	other := one(t, f.trigger(t, map[string]any{"workflowId": "capped", "to": map[string]any{"subscriberId": "u2"}}))
	if count, throttled := counted(t, w.h, w.key, other); count != 1 || throttled {
		t.Fatalf("u2: count %d throttled %v", count, throttled)
	}
}

// A window expires: with a window of a second, two runs count 1 and 2;
// a run that reaches the step once a window has passed since the second
// completed counts 1 again and is not throttled. The wait is a lower
// bound (the run is later, never earlier, on a loaded machine).
func TestThrottleWindowExpiresE2E(t *testing.T) {
	t.Parallel()
	const window = time.Second
	w := newThrottleWorld(t, 1, window, testherald.Options{})
	first := w.trigger(t, w.h)
	if count, throttled := counted(t, w.h, w.key, first); count != 1 || throttled {
		t.Fatalf("first: count %d throttled %v", count, throttled)
	}
	second := w.trigger(t, w.h)
	count, throttled := counted(t, w.h, w.key, second)
	// A loaded machine may hold the second run for over a window after
	// the first reached the step: it then counts 1 itself.
	if (count != 2 || !throttled) && (count != 1 || throttled) {
		t.Fatalf("second: count %d throttled %v", count, throttled)
	}
	// Both runs reached the step before counted returned: a window
	// from now on, neither is in the window of the next run.
	time.Sleep(window + 50*time.Millisecond)
	third := w.trigger(t, w.h)
	if count, throttled := counted(t, w.h, w.key, third); count != 1 || throttled {
		t.Fatalf("after the window: count %d throttled %v", count, throttled)
	}
	want := map[string]int{first: 1, third: 1}
	if count == 1 {
		want[second] = 1
	}
	if got := waitMailed(t, w.mail, len(want)); !maps.Equal(got, want) {
		t.Fatalf("messages by run %v, want %v", got, want)
	}
}

// A throttle step out of range fails its run terminally with invalid_step
// after one Bridge call: a limit under 1, a window of 0 or over 31 days,
// a key over 256 characters.
func TestThrottleOutOfRangeFailsTheRunE2E(t *testing.T) {
	t.Parallel()
	h, key, b := startRaw(t, testherald.Options{})
	cases := map[string]string{
		"limit0":   `{"stepId":"t","type":"throttle","limit":0,"window":60}`,
		"nolimit":  `{"stepId":"t","type":"throttle","window":60}`,
		"window0":  `{"stepId":"t","type":"throttle","limit":1,"window":0}`,
		"month":    `{"stepId":"t","type":"throttle","limit":1,"window":"745h"}`,
		"longkey":  `{"stepId":"t","type":"throttle","limit":1,"window":60,"key":"` + strings.Repeat("k", 257) + `"}`,
		"nowindow": `{"stepId":"t","type":"throttle","limit":1}`,
	}
	runs := map[string]string{}
	for wf, step := range cases {
		b.set(wf, 200, `{"status":"step","step":`+step+`}`)
		runs[wf] = triggerOne(t, h, key, wf)
	}
	for wf, runID := range runs {
		run := h.WaitRun(key, runID, "failed", "completed")
		runErr, _ := run["error"].(map[string]any)
		if run["status"] != "failed" || runErr["code"] != "invalid_step" {
			t.Errorf("%s: run %.300v", wf, run)
		}
		if n := b.count(wf); n != 1 {
			t.Errorf("%s: %d Bridge calls, want 1", wf, n)
		}
	}
}

// Two processes on one NATS server count together: twelve triggers sent
// at once, half through each, count 1 to 12 with no count twice; then,
// one process stopped, the other goes on at 13 from the log.
func TestThrottleTwoProcessesCountTogetherE2E(t *testing.T) {
	t.Parallel()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	env := map[string]string{
		"HERALD_NATS_URL":             srv.ClientURL(),
		"HERALD_ALLOW_PRIVATE_EGRESS": "true",
		"HERALD_MASTER_KEY":           base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"HERALD_ADMIN_TOKEN":          "hadm_throttle_test_admin_token_0123456789",
		"HERALD_INTERNAL_TOKEN":       "hint_throttle_test_internal_token_012345",
	}
	w := newThrottleWorld(t, 3, time.Hour, testherald.Options{Env: env})
	a, b := w.h, testherald.Start(t, testherald.Options{Env: env})
	// b serves the tenant once its projections hold it.
	testwait.For(t, "the second process to know the subscriber", func() bool {
		return b.Do("GET", "/v1/subscribers/u1", w.key, nil).Status == http.StatusOK
	})
	const n = 12
	runs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := a
			if i%2 == 1 {
				h = b
			}
			r := h.Do("POST", "/v1/events", w.key, map[string]any{"workflowId": "capped", "to": map[string]any{"subscriberId": "u1"}})
			var res struct{ Runs []struct{ RunID string } }
			if r.Status == http.StatusAccepted {
				r.JSON(t, &res)
			}
			if len(res.Runs) != 1 {
				t.Errorf("trigger %d: %d %s", i, r.Status, r.Body)
				return
			}
			runs[i] = res.Runs[0].RunID
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var counts []int
	byCount := map[int]string{}
	for _, runID := range runs {
		count, throttled := counted(t, a, w.key, runID)
		if throttled != (count > 3) {
			t.Errorf("run %s: count %d throttled %v", runID, count, throttled)
		}
		counts = append(counts, count)
		byCount[count] = runID
	}
	slices.Sort(counts)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(counts, want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	got := waitMailed(t, w.mail, 3)
	if len(got) != 3 || got[byCount[1]] != 1 || got[byCount[2]] != 1 || got[byCount[3]] != 1 {
		t.Fatalf("messages by run %v, runs by count %v", got, byCount)
	}
	// The second process alone goes on from the log.
	a.Stop()
	for i := n + 1; i <= n+2; i++ {
		runID := w.trigger(t, b)
		if count, throttled := counted(t, b, w.key, runID); count != i || !throttled {
			t.Fatalf("after the stop: count %d throttled %v, want %d", count, throttled, i)
		}
	}
	if got := mailed(w.mail); len(got) != 3 {
		t.Fatalf("messages by run %v", got)
	}
}
