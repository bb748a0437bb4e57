package engine_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// TestTriggerPastItsAcceptDeadlineIsBusy: a single-subscriber trigger
// whose writes do not land within AckWait/3 of its arming (an overloaded
// event log) is answered 503 busy with a Retry-After, never a 500: the
// client repeats it under its transactionId.
func TestTriggerPastItsAcceptDeadlineIsBusy(t *testing.T) {
	t.Parallel()
	wf := bridge.MustWorkflow("quick", func(ctx *bridge.Context, _ any) error { return nil })
	// 10µs for the arming and the accepting write: always late.
	h := testherald.Start(t, testherald.Options{AckWait: 30 * time.Microsecond, DeliverURL: testherald.NewStandInDelivery(t).URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "quick", "transactionId": "late-1",
		"to": map[string]any{"subscriberId": "ada"}})
	var body struct{ Error struct{ Code string } }
	r.JSON(t, &body)
	if r.Status != http.StatusServiceUnavailable || body.Error.Code != "busy" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("late accept: %d %s (Retry-After %q), want 503 busy with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
}
