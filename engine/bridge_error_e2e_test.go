package engine_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// The tenant sees, in GET /v1/runs/{id}, the Bridge's own message of a 500
// whose body is a Bridge error body, in the step's error and the run's;
// any other answer (an HTML page, a 502) shows only its status.
func TestBridgeErrorMessageReachesTheRun(t *testing.T) {
	t.Parallel()
	h, key, b := startRaw(t, testherald.Options{Env: map[string]string{"HERALD_MAX_ATTEMPTS": "2", "HERALD_RETRY_BASE": "10ms"}})
	b.set("step", 500, `{"error":{"code":"step_failed","message":"boom","stepId":"a"}}`)
	b.set("workflow", 500, `{"error":{"message":"boom"}}`)
	b.set("html", 500, `<html><body>boom db_password=hunter2</body></html>`)
	b.set("gateway", 502, `{"error":{"message":"boom"}}`)
	want := map[string]string{
		"step":     "boom",
		"workflow": "boom",
		"html":     "bridge answered 500: internal server error",
		"gateway":  "bridge answered 502: bad gateway",
	}
	runs := map[string]string{}
	for wf := range want {
		runs[wf] = triggerOne(t, h, key, wf)
	}
	for wf, runID := range runs {
		run := h.WaitRun(key, runID, "failed", "completed")
		runErr, _ := run["error"].(map[string]any)
		steps, _ := run["steps"].([]any)
		if run["status"] != "failed" || runErr["code"] != "attempts_exhausted" || len(steps) != 1 {
			t.Errorf("%s: run %v", wf, run)
			continue
		}
		// The failure is on a step with its id and type, ended as the run
		// is, its attempts the count the run's error names.
		step := steps[0].(map[string]any)
		id, typ := "bridge", "bridge"
		if wf == "step" {
			id, typ = "a", "run"
		}
		if step["stepId"] != id || step["type"] != typ || step["status"] != "failed" || step["attempts"] != float64(2) {
			t.Errorf("%s: step %v, want %s (%s) failed after 2 attempts", wf, step, id, typ)
		}
		if m, _ := runErr["message"].(string); !strings.HasPrefix(m, "step "+id+" failed 2 times;") {
			t.Errorf("%s: the run's error %q does not name step %s and its 2 attempts", wf, m, id)
		}
		stepErr, _ := step["error"].(map[string]any)
		for what, msg := range map[string]any{"run": runErr["message"], "step": stepErr["message"]} {
			s, _ := msg.(string)
			// The run's end naming the step (step a failed 2 times; last:
			// step_failed: boom), on the run and its failed step.
			if s != want[wf] && !strings.HasSuffix(s, ": "+want[wf]) {
				t.Errorf("%s: the %s's error message %q does not end with %q", wf, what, s, want[wf])
			}
			if want[wf] != "boom" && (strings.Contains(s, "boom") || strings.Contains(s, "hunter2")) {
				t.Errorf("%s: the %s's error message %q echoes the answer", wf, what, s)
			}
		}
	}
}

// A run failed at once shows the step it failed on with its id and type:
// a send the tenant has no channel for is a send step; a workflow the
// Bridge does not serve fails the call to the Bridge, the step bridge.
func TestTerminalFailureNamesItsStep(t *testing.T) {
	t.Parallel()
	wf := bridge.MustWorkflow("sms", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Send(ctx, "text", "sms", func(context.Context) (bridge.SendContent, error) { return bridge.SendContent{Body: "hi"}, nil })
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	f.delivery.Answer = func(map[string]any) (int, any) {
		return http.StatusUnprocessableEntity, map[string]any{"error": map[string]string{"code": "no_channel", "message": "no enabled sms channel"}}
	}
	for wf, want := range map[string]struct{ id, typ, code string }{
		"sms":  {"text", "send", "no_channel"},
		"gone": {"bridge", "bridge", "workflow_not_found"},
	} {
		run := f.h.WaitRun(f.key, one(t, f.trigger(t, map[string]any{"workflowId": wf, "to": map[string]any{"subscriberId": "u1"}})),
			"failed", "completed")
		runErr, _ := run["error"].(map[string]any)
		steps, _ := run["steps"].([]any)
		if run["status"] != "failed" || runErr["code"] != want.code || len(steps) != 1 {
			t.Errorf("%s: run %v", wf, run)
			continue
		}
		step := steps[0].(map[string]any)
		stepErr, _ := step["error"].(map[string]any)
		if step["stepId"] != want.id || step["type"] != want.typ || step["status"] != "failed" ||
			step["attempts"] != float64(1) || stepErr["code"] != want.code {
			t.Errorf("%s: step %v, want %s (%s) failed with %s", wf, step, want.id, want.typ, want.code)
		}
	}
}
