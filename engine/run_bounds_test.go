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

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/service"
)

// A run is bounded in steps (Config.MaxRunSteps) and in its outputs
// together (Config.MaxRunOutputBytes): the answer that would pass a bound
// fails the run with invalid_step. The bounds are set low here (40 steps,
// 1 MB): at the defaults (1,000 steps, 8 MiB) each Bridge call carries a
// history growing to the bound, a minute and a half of the race
// detector's time for the same code.
func TestRunStepsAndOutputsAreBounded(t *testing.T) {
	t.Parallel() // independent of the others
	const maxSteps, maxBytes = 40, 1_000_000
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL,
		Tune: func(c *service.Config) { c.MaxRunSteps, c.MaxRunOutputBytes = maxSteps, maxBytes }})
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
		if req.WorkflowID == "heavy" { // ~100 kB a step
			out = `"` + strings.Repeat("o", 100_000) + `"`
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
		{"heavy", maxBytes / 100_002},
		{"endless", maxSteps},
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
