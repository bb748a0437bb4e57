package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/metrics"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d", rec.Code)
	}
	return rec.Body.String()
}

func TestInstrumentsAppearInTheExposition(t *testing.T) {
	m := metrics.New()
	m.ObserveRequest("GET", "/v1/runs/{runId}", 200, 3*time.Millisecond)
	m.ObserveRequest("GET", "/v1/runs/{runId}", 404, time.Millisecond)
	for _, typ := range []string{events.RunStarted, events.RunStarted, events.RunCompleted, events.RunFailed,
		events.DeliverySent, "SubscriberUpserted"} {
		m.EventAppended(typ)
	}
	bridge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer bridge.Close()
	client := &http.Client{Transport: m.BridgeTransport(http.DefaultTransport)}
	resp, err := client.Get(bridge.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	applied := uint64(90)
	m.SampleProjector(func() uint64 { return applied }, func(context.Context) (uint64, error) { return 100, nil })
	m.SampleConsumers(func(context.Context) ([]metrics.ConsumerSample, error) {
		return []metrics.ConsumerSample{{Name: "herald-runs", Pending: 7, AckPending: 3, Redelivered: 1}}, nil
	})
	m.SampleReady(func() bool { return true })
	m.WokeLate(3 * time.Millisecond)
	m.WokeLate(-time.Millisecond) // a clock step back counts as on time
	m.SteppedAside()

	out := scrape(t, m)
	for _, want := range []string{
		`herald_http_requests_total{method="GET",route="/v1/runs/{runId}",status="200"} 1`,
		`herald_http_requests_total{method="GET",route="/v1/runs/{runId}",status="404"} 1`,
		`herald_http_request_duration_seconds_count{method="GET",route="/v1/runs/{runId}"} 2`,
		`herald_events_appended_total 6`,
		`herald_runs_started_total 2`,
		`herald_runs_finished_total{status="completed"} 1`,
		`herald_runs_finished_total{status="failed"} 1`,
		`herald_runs_finished_total{status="cancelled"} 0`,
		`herald_deliveries_total{status="sent"} 1`,
		`herald_bridge_call_duration_seconds_count{outcome="5xx"} 1`,
		`herald_projector_lag_events 10`,
		`herald_projector_applied_sequence 90`,
		`herald_work_pending_messages{consumer="herald-runs"} 7`,
		`herald_work_ack_pending_messages{consumer="herald-runs"} 3`,
		`herald_ready 1`,
		`herald_timer_lateness_seconds_bucket{le="0.001"} 1`,
		`herald_timer_lateness_seconds_bucket{le="0.005"} 2`,
		`herald_timer_lateness_seconds_count 2`,
		`herald_turns_stepped_aside_total 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the exposition lacks %s", want)
		}
	}
}

func TestFailedSamplesAreLeftOut(t *testing.T) {
	m := metrics.New()
	m.SampleProjector(func() uint64 { return 5 }, func(context.Context) (uint64, error) { return 0, errors.New("nats down") })
	m.SampleConsumers(func(context.Context) ([]metrics.ConsumerSample, error) { return nil, errors.New("nats down") })
	out := scrape(t, m)
	if strings.Contains(out, "herald_projector_lag_events ") || strings.Contains(out, "herald_work_pending_messages{") {
		t.Fatalf("a failed sample was reported:\n%s", out)
	}
	if !strings.Contains(out, "herald_projector_applied_sequence 5") {
		t.Fatal("the local checkpoint is reported even when NATS is not")
	}
}

func TestNilMetricsIgnoresReports(t *testing.T) {
	var m *metrics.Metrics
	m.ObserveRequest("GET", "/x", 200, time.Millisecond)
	m.EventAppended(events.RunCompleted)
	if rt := m.BridgeTransport(http.DefaultTransport); rt != http.DefaultTransport {
		t.Fatal("a nil Metrics wrapped the transport")
	}
}

// Two instances do not share state: no global registry.
func TestInstancesAreIndependent(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.EventAppended(events.RunCompleted)
	if strings.Contains(scrape(t, b), `herald_runs_finished_total{status="completed"} 1`) {
		t.Fatal("b saw a's count")
	}
}
