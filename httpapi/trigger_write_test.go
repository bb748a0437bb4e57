package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/engine"
)

// The streamed trigger answer is byte for byte what writeJSON writes.
func TestWriteTriggerMatchesWriteJSON(t *testing.T) {
	for name, res := range map[string]engine.TriggerResult{
		"none": {TransactionID: "txn_1", Runs: []engine.RunRef{}},
		"one":  {TransactionID: "txn_<&>", Runs: []engine.RunRef{{RunID: "run_a", SubscriberID: "s<1>", Status: "dispatched"}}},
		"many": {TransactionID: "t", Runs: []engine.RunRef{
			{RunID: "run_a", SubscriberID: "a", Status: "dispatched"},
			{SubscriberID: "b", Status: "failed"},
			{RunID: "run_c", SubscriberID: "c\u2028", Status: "dispatched"},
		}},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeJSON(want, 202, res)
		writeTrigger(got, res)
		if got.Code != want.Code || got.Body.String() != want.Body.String() ||
			got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s: got %d %q, want %d %q", name, got.Code, got.Body, want.Code, want.Body)
		}
	}
}
