package engine_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/internal/testherald"
)

// A run is bounded in steps (MaxRunSteps) and in its outputs together
// (MaxRunOutputBytes): the answer that would pass a bound fails the run
// with invalid_step.
func TestRunStepsAndOutputsAreBounded(t *testing.T) {
	t.Parallel() // long, and independent of the others
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	_, key := h.Tenant("Acme")
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			WorkflowID string
			Steps      []json.RawMessage
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		out := `1`
		if req.WorkflowID == "heavy" { // ~1 MB a step
			out = `"` + strings.Repeat("o", 1_000_000) + `"`
		}
		_, _ = fmt.Fprintf(w, `{"status":"step","step":{"stepId":"s%d","type":"run","output":%s}}`, len(req.Steps), out)
	}))
	t.Cleanup(srv.Close)
	if r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": srv.URL}); r.Status != http.StatusOK {
		t.Fatalf("PUT /v1/bridge: %d %s", r.Status, r.Body)
	}
	for _, tt := range []struct {
		workflow string
		steps    int
	}{
		{"heavy", engine.MaxRunOutputBytes / 1_000_002},
		{"endless", engine.MaxRunSteps},
	} {
		calls.Store(0)
		runID := triggerOne(t, h, key, tt.workflow)
		run := h.WaitRun(key, runID, "failed", "completed")
		steps := run["steps"].([]any)
		last := steps[len(steps)-1].(map[string]any)
		runErr := run["error"].(map[string]any)
		if runErr["code"] != "invalid_step" || len(steps) != tt.steps+1 || last["status"] != "failed" || calls.Load() != int64(tt.steps+1) {
			t.Fatalf("%s: %d steps, %d calls, error %v", tt.workflow, len(steps), calls.Load(), runErr)
		}
	}
}
