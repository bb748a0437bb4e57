package httpapi_test

import (
	"net/http"
	"testing"
)

// statsAnswer is GET /v1/stats's body.
type statsAnswer struct {
	Window, From, To string
	Runs             struct{ Started, Completed, Failed, Cancelled int }
	Deliveries       map[string]map[string]int
	LatencyMs        struct{ P50, P99 *int64 }
	Series           []struct {
		At                                                                       string
		RunsStarted, RunsCompleted, RunsFailed, DeliveriesSent, DeliveriesFailed int
	}
	TopFailing []struct {
		WorkflowID string
		Failed     int
	}
}

// TestStatsOverview: GET /v1/stats counts the runs and deliveries of the
// window from the projector's buckets: two runs started with a send
// each (one sent, one skipped), a third that failed, named among the
// failing workflows; a latency from trigger to first send; a series of
// a bucket a minute for 1h, a quarter hour for 24h, an hour for 7d; a
// window it does not know is 422.
func TestStatsOverview(t *testing.T) {
	t.Parallel() // a service of its own, waiting on its runs: beside the others
	f := newConsoleFixture(t)
	broken := f.trigger(t, "broken", "ada")
	f.h.WaitRun(f.key, broken, "failed")
	get := func(q string) statsAnswer {
		t.Helper()
		r := f.h.Do("GET", "/v1/stats"+q, f.key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		var s statsAnswer
		r.JSON(t, &s)
		return s
	}
	for q, buckets := range map[string]int{"": 60, "?window=1h": 60, "?window=24h": 96, "?window=7d": 168} {
		s := get(q)
		if s.Runs.Started != 3 || s.Runs.Failed != 1 || s.Deliveries["email"]["sent"] != 1 || s.Deliveries["email"]["skipped"] != 1 {
			t.Errorf("%s: runs %+v deliveries %v", q, s.Runs, s.Deliveries)
		}
		if len(s.TopFailing) != 1 || s.TopFailing[0].WorkflowID != "broken" || s.TopFailing[0].Failed != 1 {
			t.Errorf("%s: top failing %+v", q, s.TopFailing)
		}
		if s.LatencyMs.P50 == nil || s.LatencyMs.P99 == nil || *s.LatencyMs.P50 > *s.LatencyMs.P99 {
			t.Errorf("%s: latency %+v", q, s.LatencyMs)
		}
		started, sent := 0, 0
		for _, p := range s.Series {
			started += p.RunsStarted
			sent += p.DeliveriesSent
		}
		if len(s.Series) != buckets || started != 3 || sent != 1 {
			t.Errorf("%s: %d buckets, %d started, %d sent", q, len(s.Series), started, sent)
		}
	}
	expectCode(t, f.h.Do("GET", "/v1/stats?window=2h", f.key, nil), http.StatusUnprocessableEntity, "validation_failed")
	if r := f.h.Do("GET", "/v1/stats", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", r.Status)
	}
}
