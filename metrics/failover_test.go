package metrics_test

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/metrics"
)

// The failover instruments: restarts by consumer, the projector's stall.
func TestFailoverInstruments(t *testing.T) {
	m := metrics.New()
	stalled := true
	m.SampleStalled(func() bool { return stalled })
	m.ConsumerRestarted("herald-runs", "stalled: nothing delivered")
	m.ConsumerRestarted("herald-runs", "consumer deleted")
	m.TailRestarted()
	out := scrape(t, m)
	for _, want := range []string{
		`herald_consumer_restarts_total{consumer="herald-runs"} 2`,
		`herald_consumer_restarts_total{consumer="tail"} 1`,
		`herald_projector_stalled 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	stalled = false
	if out := scrape(t, m); !strings.Contains(out, "herald_projector_stalled 0") {
		t.Errorf("a projector applying again still reads stalled:\n%s", out)
	}
	var none *metrics.Metrics
	none.ConsumerRestarted("herald-runs", "") // a nil Metrics ignores reports
}
