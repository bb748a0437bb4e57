package httpapi

import (
	"net/http"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/projections"
)

// statsWindows are the windows of GET /v1/stats and the resolution each
// reads.
var statsWindows = map[string]struct {
	span time.Duration
	res  projections.Resolution
}{
	"1h":  {time.Hour, projections.ByMinute},
	"24h": {24 * time.Hour, projections.ByQuarter},
	"7d":  {7 * 24 * time.Hour, projections.ByHour},
}

type statsRuns struct {
	Started   int `json:"started"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

type statsLatency struct {
	P50 *int64 `json:"p50"`
	P99 *int64 `json:"p99"`
}

type statsPoint struct {
	At               string `json:"at"`
	RunsStarted      int    `json:"runsStarted"`
	RunsCompleted    int    `json:"runsCompleted"`
	RunsFailed       int    `json:"runsFailed"`
	DeliveriesSent   int    `json:"deliveriesSent"`
	DeliveriesFailed int    `json:"deliveriesFailed"`
}

type statsView struct {
	Window     string                         `json:"window"`
	From       string                         `json:"from"`
	To         string                         `json:"to"`
	Runs       statsRuns                      `json:"runs"`
	Deliveries map[string]map[string]int      `json:"deliveries"`
	LatencyMs  statsLatency                   `json:"latencyMs"`
	Series     []statsPoint                   `json:"series"`
	TopFailing []projections.WorkflowFailures `json:"topFailing"`
}

// sumOutcome counts the outcomes in b's deliveries of every kind.
func sumOutcome(b projections.StatsBucket, outcomes ...string) int {
	n := 0
	for _, byOutcome := range b.Deliveries {
		for _, o := range outcomes {
			n += byOutcome[o]
		}
	}
	return n
}

// stats is GET /v1/stats?window=1h|24h|7d: the tenant's runs and
// deliveries over the window, from the buckets the projector keeps.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	name := r.URL.Query().Get("window")
	if name == "" {
		name = "1h"
	}
	win, ok := statsWindows[name]
	if !ok {
		var p apierr.Problems
		p.Add("window", "must be 1h, 24h or 7d")
		return p.Err()
	}
	if err := s.caughtUp(r); err != nil {
		return err
	}
	// The window's buckets end with the one holding now.
	to := time.Now().UTC()
	end := to.Truncate(win.res.Step).Add(win.res.Step)
	from := end.Add(-win.span)
	total, series, err := s.deps.Store.Stats(tenantOf(r.Context()), win.res, from, end)
	if err != nil {
		return err
	}
	v := statsView{Window: name, From: ts(from), To: ts(to),
		Runs:       statsRuns{total.RunsStarted, total.RunsCompleted, total.RunsFailed, total.RunsCancelled},
		Deliveries: map[string]map[string]int{}, Series: make([]statsPoint, 0, len(series)), TopFailing: total.TopFailing(5)}
	for kind, outcomes := range total.Deliveries {
		v.Deliveries[kind] = outcomes
	}
	if p := total.LatencyQuantile(0.5); p >= 0 {
		p99 := total.LatencyQuantile(0.99)
		v.LatencyMs = statsLatency{&p, &p99}
	}
	for i, b := range series {
		v.Series = append(v.Series, statsPoint{At: ts(from.Add(time.Duration(i) * win.res.Step)), RunsStarted: b.RunsStarted,
			RunsCompleted: b.RunsCompleted, RunsFailed: b.RunsFailed,
			DeliveriesSent: sumOutcome(b, "sent"), DeliveriesFailed: sumOutcome(b, "failed", "bounced")})
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}
