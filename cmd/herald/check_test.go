package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// checkWorkflows are a tenant's workflows: onboard sleeps an hour at
// "pause", approval waits at "approve" for a signal, quick completes;
// each runs "load" first. The code of a deploy: rename renames the step
// each run waits at, renameLoad the first step, and dropQuick removes
// quick. loads counts the calls of the "load" step's body.
func checkWorkflows(rename, renameLoad, dropQuick bool, loads *atomic.Int64) *bridge.Registry {
	pause, approve, first := "pause", "approve", "load"
	if rename {
		pause, approve = "pause_1h", "approval"
	}
	if renameLoad {
		first = "fetch"
	}
	load := func(ctx *bridge.Context) error {
		_, err := bridge.Run(ctx, first, func(context.Context) (string, error) {
			loads.Add(1)
			return "ada", nil
		})
		return err
	}
	onboard := bridge.MustWorkflow("onboard", func(ctx *bridge.Context, _ struct{}) error {
		if err := load(ctx); err != nil {
			return err
		}
		return bridge.Delay(ctx, pause, time.Hour)
	})
	approval := bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ struct{}) error {
		if err := load(ctx); err != nil {
			return err
		}
		_, _, err := bridge.WaitForEvent[map[string]any](ctx, approve, "approved", 0)
		return err
	})
	quick := bridge.MustWorkflow("quick", func(ctx *bridge.Context, _ struct{}) error { return load(ctx) })
	reg := bridge.NewRegistry().MustRegister(onboard).MustRegister(approval)
	if !dropQuick {
		reg.MustRegister(quick)
	}
	return reg
}

// TestCheckCandidateBridge: runs waiting at a delay and at a signal,
// checked against a candidate Bridge that renames the step each waits
// at, are listed as breaking at that step's position with the recorded
// and the candidate's step; the same check against the Bridge in place
// lists none; no step body of the candidate runs and nothing is written
// to the log; herald check exits 1 and 0 accordingly.
func TestCheckCandidateBridge(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	var live atomic.Int64
	current := h.Bridge(key, checkWorkflows(false, false, false, &live))
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	trigger := func(workflow string) string {
		t.Helper()
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": "u1"}})
		if r.Status != http.StatusAccepted {
			t.Fatalf("trigger %s: %d %s", workflow, r.Status, r.Body)
		}
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		return res.Runs[0].RunID
	}
	sleeping, waiting, done := trigger("onboard"), trigger("approval"), trigger("quick")
	h.WaitRun(key, sleeping, "sleeping")
	h.WaitRun(key, waiting, "waiting")
	h.WaitRun(key, done, "completed")

	var candidateLoads atomic.Int64
	candidate := httptest.NewServer(bridge.Serve(checkWorkflows(true, false, false, &candidateLoads), bridge.Options{SigningKey: "whsec_candidate"}))
	defer candidate.Close()

	ctx := context.Background()
	lastSeq := func() uint64 {
		t.Helper()
		seq, err := h.Log().LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	before, liveBefore := lastSeq(), live.Load()

	type stepView struct{ StepID, Type, Error string }
	var rep struct {
		Checked, OK int
		Breaking    []struct {
			RunID, WorkflowID, Status string
			Position                  int
			Recorded, Candidate       stepView
		}
	}
	r := h.Do("POST", "/v1/checks", key, map[string]any{"bridgeUrl": candidate.URL, "signingSecret": "whsec_candidate"})
	if r.Status != http.StatusOK {
		t.Fatalf("check: %d %s", r.Status, r.Body)
	}
	rep.Breaking = nil // decoded afresh, no field of a previous answer kept
	r.JSON(t, &rep)
	if rep.Checked != 3 || rep.OK != 1 || len(rep.Breaking) != 2 {
		t.Fatalf("check against the renaming candidate: %s", r.Body)
	}
	want := map[string]struct {
		workflow, status    string
		recorded, candidate stepView
	}{
		sleeping: {"onboard", "sleeping", stepView{StepID: "pause", Type: "delay"}, stepView{StepID: "pause_1h", Type: "delay"}},
		waiting:  {"approval", "waiting", stepView{StepID: "approve", Type: "waitForEvent"}, stepView{StepID: "approval", Type: "waitForEvent"}},
	}
	for _, b := range rep.Breaking {
		w, ok := want[b.RunID]
		if !ok || b.WorkflowID != w.workflow || b.Status != w.status || b.Position != 2 || b.Recorded != w.recorded || b.Candidate != w.candidate {
			t.Errorf("breaking run %+v, want %+v", b, w)
		}
	}
	if n := candidateLoads.Load(); n != 0 {
		t.Errorf("the candidate's run step body ran %d times during the check", n)
	}

	// A deploy that renames the first step and drops a workflow breaks
	// every run at position 1, the finished one included (listed after the
	// unfinished ones), without calling a step body either.
	other := httptest.NewServer(bridge.Serve(checkWorkflows(false, true, true, &candidateLoads), bridge.Options{SigningKey: "whsec_candidate"}))
	defer other.Close()
	r = h.Do("POST", "/v1/checks", key, map[string]any{"bridgeUrl": other.URL, "signingSecret": "whsec_candidate"})
	rep.Breaking = nil // decoded afresh, no field of a previous answer kept
	r.JSON(t, &rep)
	if r.Status != http.StatusOK || rep.Checked != 3 || rep.OK != 0 || len(rep.Breaking) != 3 || rep.Breaking[2].RunID != done {
		t.Fatalf("check against a candidate renaming the first step: %d %s", r.Status, r.Body)
	}
	for _, b := range rep.Breaking {
		load := stepView{StepID: "load", Type: "run"}
		switch {
		case b.Position != 1 || b.Recorded != load:
			t.Errorf("breaking run %+v: want position 1, recorded load", b)
		case b.RunID == done && (b.Status != "completed" || !strings.HasPrefix(b.Candidate.Error, "workflow_not_found")):
			t.Errorf("the run of the dropped workflow: %+v", b)
		case b.RunID != done && b.Candidate != stepView{StepID: "fetch", Type: "run"}:
			t.Errorf("breaking run %+v: want the candidate's fetch", b)
		}
	}
	// Only the finished run breaks: herald check passes (below).
	r = h.Do("POST", "/v1/checks", key, map[string]any{"bridgeUrl": other.URL, "signingSecret": "whsec_candidate", "workflowId": "quick"})
	rep.Breaking = nil // decoded afresh, no field of a previous answer kept
	r.JSON(t, &rep)
	if r.Status != http.StatusOK || rep.Checked != 1 || len(rep.Breaking) != 1 {
		t.Fatalf("check of quick against a candidate without it: %d %s", r.Status, r.Body)
	}

	// The Bridge in place, with the tenant's own secret: nothing breaks.
	r = h.Do("POST", "/v1/checks", key, map[string]any{"bridgeUrl": current.URL})
	if r.Status != http.StatusOK {
		t.Fatalf("check: %d %s", r.Status, r.Body)
	}
	rep.Breaking = nil // decoded afresh, no field of a previous answer kept
	r.JSON(t, &rep)
	if rep.Checked != 3 || rep.OK != 3 || len(rep.Breaking) != 0 {
		t.Fatalf("check against the Bridge in place: %s", r.Body)
	}
	// One workflow only.
	r = h.Do("POST", "/v1/checks", key, map[string]any{"bridgeUrl": candidate.URL, "signingSecret": "whsec_candidate", "workflowId": "quick"})
	rep.Breaking = nil // decoded afresh, no field of a previous answer kept
	r.JSON(t, &rep)
	if r.Status != http.StatusOK || rep.Checked != 1 || rep.OK != 1 {
		t.Fatalf("check of quick: %d %s", r.Status, r.Body)
	}
	// A secret the candidate refuses: one error, not a list of breaks.
	if r := h.Do("POST", "/v1/checks", key, map[string]any{"bridgeUrl": candidate.URL}); r.Status != http.StatusBadGateway || r.ErrorCode() != "bridge_rejected" {
		t.Fatalf("check with the wrong secret: %d %s", r.Status, r.Body)
	}
	for _, body := range []map[string]any{
		{"bridgeUrl": "not a url"},
		{"bridgeUrl": candidate.URL, "since": "a week"},
		{"bridgeUrl": candidate.URL, "max": -1},
		{"bridgeUrl": candidate.URL, "max": 1_000_000},
		{"bridgeUrl": candidate.URL, "workflowId": "9 lives"},
	} {
		if r := h.Do("POST", "/v1/checks", key, body); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "validation_failed" {
			t.Errorf("check %v: %d %s", body, r.Status, r.Body)
		}
	}

	// herald check: a table and exit status 1, then 0.
	// --http is host:port, or the server's base URL.
	server := h.Addr()
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"check", "--http", server}, args...), &out, &out)
		return out.String(), err
	}
	t.Setenv("HERALD_API_KEY", key)
	out, err := cli("--bridge", candidate.URL, "--secret", "whsec_candidate")
	if !errors.Is(err, errUnfinishedBreak) || report(err, &bytes.Buffer{}) != 1 {
		t.Fatalf("herald check against the renaming candidate: %v\n%s", err, out)
	}
	for _, s := range []string{"checked 3 runs: 1 ok, 2 breaking", sleeping, waiting, "pause (delay)", "pause_1h (delay)", "approval (waitForEvent)"} {
		if !strings.Contains(out, s) {
			t.Errorf("herald check's table lacks %q:\n%s", s, out)
		}
	}
	server = h.URL()
	if out, err := cli("--bridge", current.URL); err != nil || !strings.Contains(out, "checked 3 runs: 3 ok, 0 breaking") {
		t.Fatalf("herald check against the Bridge in place: %v\n%s", err, out)
	}
	if out, err := cli("--bridge", other.URL, "--secret", "whsec_candidate", "--workflow", "quick"); err != nil ||
		!strings.Contains(out, "1 breaking") || !strings.Contains(out, "workflow_not_found") {
		t.Fatalf("herald check of a finished run only: %v\n%s", err, out)
	}
	if _, err := cli("--bridge", "ftp://bridge.example.com"); err == nil || !strings.Contains(err.Error(), "bridgeUrl must be an absolute http or https URL") {
		t.Fatalf("herald check of a bad URL: %v", err)
	}
	if _, err := cli("--key", key); report(err, &bytes.Buffer{}) != 2 {
		t.Fatalf("herald check without --bridge: %v", err)
	}

	if after := lastSeq(); after != before {
		t.Fatalf("the checks wrote to the log: last sequence %d, then %d", before, after)
	}
	if n := candidateLoads.Load(); n != 0 {
		t.Errorf("the candidate's run step body ran %d times", n)
	}
	if n := live.Load(); n != liveBefore {
		t.Errorf("the Bridge in place ran a step body %d times during the checks", n-liveBefore)
	}
}
