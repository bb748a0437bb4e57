package engine_test

import (
	"net/http"
	"testing"

	"github.com/heraldhq/herald/control"
)

// A run holds at most MaxPendingSignals unconsumed signals; one more is
// 409 too_many_signals and is not recorded. On main they grew without
// bound, each re-read on every step.
func TestUnconsumedSignalsAreBounded(t *testing.T) {
	t.Parallel()
	f, runID := startWaiting(t, "approval", "approved")
	for i := range control.MaxPendingSignals {
		if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "noise"}); r.Status != http.StatusAccepted {
			t.Fatalf("signal %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "approved"})
	if r.Status != http.StatusConflict || r.ErrorCode() != "too_many_signals" {
		t.Fatalf("signal beyond the bound: %d %s", r.Status, r.Body)
	}
	if run := f.h.WaitRun(f.key, runID, "waiting", "completed"); run["status"] != "waiting" {
		t.Fatalf("the refused signal was taken: %v", run)
	}
}
