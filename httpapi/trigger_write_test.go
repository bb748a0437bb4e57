package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/control"
)

// The streamed trigger answer is byte for byte what writeJSON writes.
func TestWriteTriggerMatchesWriteJSON(t *testing.T) {
	for name, res := range map[string]control.TriggerResult{
		"none": {TransactionID: "txn_1", Runs: []control.RunRef{}},
		"one":  {TransactionID: "txn_<&>", Runs: []control.RunRef{{RunID: "run_a", SubscriberID: "s<1>", Status: "dispatched"}}},
		"many": {TransactionID: "t", Runs: []control.RunRef{
			{RunID: "run_a", SubscriberID: "a", Status: "dispatched"},
			{SubscriberID: "b", Status: "failed"},
			{RunID: "run_c", SubscriberID: "c\u2028", Status: "dispatched"},
		}},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		view := triggerView{TransactionID: res.TransactionID, Runs: []runRefView{}}
		for _, r := range res.Runs {
			view.Runs = append(view.Runs, runRefView(r))
		}
		writeJSON(want, 202, view)
		writeTrigger(got, res)
		if got.Code != want.Code || got.Body.String() != want.Body.String() ||
			got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s: got %d %q, want %d %q", name, got.Code, got.Body, want.Code, want.Body)
		}
	}
}
