package engine_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// The tenant sees, in GET /v1/runs/{id}, the Bridge's own message of a 500
// whose body is a Bridge error body, in the step's error and the run's;
// any other answer (an HTML page, a 502) shows only its status.
func TestBridgeErrorMessageReachesTheRun(t *testing.T) {
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
		stepErr, _ := steps[0].(map[string]any)["error"].(map[string]any)
		for what, msg := range map[string]any{"run": runErr["message"], "step": stepErr["message"]} {
			s, _ := msg.(string)
			// The last try's (step_failed: boom), or the run's end naming it
			// (step a failed 2 times; last: step_failed: boom).
			if s != want[wf] && !strings.HasSuffix(s, ": "+want[wf]) {
				t.Errorf("%s: the %s's error message %q does not end with %q", wf, what, s, want[wf])
			}
			if want[wf] != "boom" && (strings.Contains(s, "boom") || strings.Contains(s, "hunter2")) {
				t.Errorf("%s: the %s's error message %q echoes the answer", wf, what, s)
			}
		}
	}
}
