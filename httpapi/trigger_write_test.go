package httpapi

import (
	"net/http/httptest"
	"strings"
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
		// Longer than the buffer sized for one run.
		"long": {TransactionID: strings.Repeat("t", 300), Runs: []control.RunRef{
			{RunID: "run_" + strings.Repeat("r", 200), SubscriberID: strings.Repeat("s", 400), Status: "dispatched"},
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

// BenchmarkWriteTriggerOne is the answer to a trigger to one subscriber:
// its bytes allocated per answer (-benchmem) follow the answer's size.
func BenchmarkWriteTriggerOne(b *testing.B) {
	res := control.TriggerResult{TransactionID: "txn_0123456789abcdef", Runs: []control.RunRef{
		{RunID: "run_0123456789abcdef0123456789", SubscriberID: "subscriber-42", Status: "dispatched"}}}
	b.ReportAllocs()
	for b.Loop() {
		writeTrigger(httptest.NewRecorder(), res)
	}
}
