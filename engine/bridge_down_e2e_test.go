package engine_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testwait"
)

// A run whose Bridge is down shows what is retried: a step named for the
// call to the Bridge, with its error, not a step without id or type.
func TestBridgeDownShowsTheBridgeCallRetrying(t *testing.T) {
	t.Parallel()
	h, key, _ := startRaw(t, testherald.Options{Env: map[string]string{"HERALD_MAX_ATTEMPTS": "50", "HERALD_RETRY_BASE": "10ms"}})
	// Nothing listens on this address.
	if r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "http://" + testnet.FreeAddr(t)}); r.Status != http.StatusOK {
		t.Fatalf("PUT /v1/bridge: %d %s", r.Status, r.Body)
	}
	runID := triggerOne(t, h, key, "welcome")
	var steps []any
	testwait.Until(t, "a step shown", func() error {
		run := h.Do("GET", "/v1/runs/"+runID, key, nil).Map(t)
		if steps, _ = run["steps"].([]any); len(steps) == 0 {
			return fmt.Errorf("no step in %v", run)
		}
		return nil
	})
	step, _ := steps[0].(map[string]any)
	stepErr, _ := step["error"].(map[string]any)
	if step["stepId"] != "bridge" || step["type"] != "bridge" || step["status"] != "retrying" || stepErr["message"] == "" {
		t.Fatalf("the step retried is %v", step)
	}
}
