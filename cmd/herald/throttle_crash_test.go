package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// SIGKILL while runs of one subscriber are under way at and after a
// throttle step (limit 10): after the restart every run completes, the
// counts of the runs are 1 to N, each once (none lost, none counted
// twice), and exactly the runs counted 1 to 10 e-mailed, once each.
func TestCrashWhileThrottledRunsAreUnderWay(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts child processes")
	}
	t.Parallel() // beside the other crash tests: each mostly waits on its child
	const (
		n     = 40
		limit = 10
		// recordedBeforeKill: the kill comes once this many runs passed
		// their throttle step, with the rest before, at or after it.
		recordedBeforeKill = 12
	)
	dataDir, addr := t.TempDir(), testnet.FreeAddr(t)
	child := startChild(t, dataDir, addr)
	mail := testsmtp.StartCatcher(t, 1000)
	a, _ := newMailTenant(t, childAdmin(t, dataDir, addr), "http://"+addr, "Throttle", mail)
	a.must("PUT", "/v1/subscribers/u1", map[string]any{"contacts": map[string]any{"email": []string{"u1@example.com"}}}, 200, 201)

	// The Bridge: a little work before and after the throttle step, so
	// that the kill finds runs at every point of the workflow.
	var recorded sync.Map // runId → true once its throttle step was recorded
	var passed atomic.Int32
	wf := bridge.MustWorkflow("capped", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Run(ctx, "before", func(context.Context) (bool, error) {
			time.Sleep(20 * time.Millisecond)
			return true, nil
		}); err != nil {
			return err
		}
		th, err := bridge.Throttle(ctx, "cap", limit, time.Hour, bridge.ThrottleKey("orders"))
		if err != nil {
			return err
		}
		if _, seen := recorded.LoadOrStore(ctx.RunID, true); !seen {
			passed.Add(1)
		}
		if _, err := bridge.Run(ctx, "after", func(context.Context) (bool, error) {
			time.Sleep(50 * time.Millisecond)
			return true, nil
		}); err != nil || th.Throttled {
			return err
		}
		_, err = bridge.Send(ctx, "mail", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: ctx.RunID, Body: "your order"}, nil
		})
		return err
	})
	// The calls that will describe the throttle step (the last step
	// recorded is "before") are spread 15 ms apart, so that the runs pass
	// the step over more than half a second and the kill finds some at it.
	var handler atomic.Value
	var described atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ Steps []struct{ StepID string } }
		if json.Unmarshal(body, &req) == nil && len(req.Steps) == 1 && req.Steps[0].StepID == "before" {
			time.Sleep(time.Duration(described.Add(1)) * 15 * time.Millisecond)
		}
		handler.Load().(http.Handler).ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	b, err := a.c.BindBridge(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(bridge.Serve(bridge.NewRegistry().MustRegister(wf), bridge.Options{SigningKey: b.SigningSecret}))

	var runs []string
	for range n {
		body := a.must("POST", "/v1/events", map[string]any{"workflowId": "capped", "to": map[string]any{"subscriberId": "u1"}}, 202)
		var res struct{ Runs []struct{ RunID string } }
		if err := json.Unmarshal(body, &res); err != nil || len(res.Runs) != 1 {
			t.Fatalf("trigger answered %s", body)
		}
		runs = append(runs, res.Runs[0].RunID)
	}
	deadline := time.Now().Add(hangGuard)
	for passed.Load() < recordedBeforeKill {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs passed their throttle step", passed.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	child.Kill()
	t.Logf("killed with %d of %d runs past their throttle step", passed.Load(), n)
	startChild(t, dataDir, addr)

	// Every run completes, with its count.
	counts := map[int][]string{}
	for _, runID := range runs {
		var run struct {
			Status string
			Steps  []struct {
				StepID string
				Output json.RawMessage
			}
		}
		for {
			if st, body := a.do("GET", "/v1/runs/"+runID, nil); st == 200 {
				if err := json.Unmarshal(body, &run); err != nil {
					t.Fatal(err)
				}
				if run.Status == "completed" || run.Status == "failed" {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s: %s after the restart", runID, run.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
		var out struct {
			Throttled bool
			Count     int
		}
		if run.Status != "completed" || len(run.Steps) < 2 || run.Steps[1].StepID != "cap" || json.Unmarshal(run.Steps[1].Output, &out) != nil ||
			out.Throttled != (out.Count > limit) {
			t.Fatalf("run %s: %+v", runID, run)
		}
		counts[out.Count] = append(counts[out.Count], runID)
	}
	var got []int
	for c, rs := range counts {
		if len(rs) != 1 {
			t.Errorf("count %d given to %d runs: %v", c, len(rs), rs)
		}
		got = append(got, c)
	}
	slices.Sort(got)
	for i, c := range got {
		if c != i+1 {
			t.Fatalf("counts %v, want 1 to %d", got, n)
		}
	}
	// Exactly the runs counted 1 to limit e-mailed, once each: a send the
	// kill caught after the server took it and before it was recorded is
	// sent again by the takeover, with the same Message-ID, which counts
	// as the same send.
	var sends testsmtp.Sends
	for {
		sends = testsmtp.CountSends(t, mail.Inbox().Messages(), testsmtp.BySubject)
		if len(sends.Keys()) >= limit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs e-mailed, want %d", len(sends.Keys()), limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var mailed []string
	for c := 1; c <= limit; c++ {
		mailed = append(mailed, counts[c][0])
	}
	if copies := sends.Once(t, mailed); copies > 0 {
		t.Logf("%d sends taken over after the kill arrived twice, with the same Message-ID", copies)
	}
}
