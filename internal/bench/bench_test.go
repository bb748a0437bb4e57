package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/internal/testchild"
)

// TestMain lets the test binary run as `herald serve`, the child the bench
// measures, configured from the environment the bench sets.
func TestMain(m *testing.M) { testchild.Main(m, nil) }

// TestSmoke runs every scenario at a tiny size: the bench works end to
// end, checks what it measures and reports it.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herald serve processes")
	}
	var progress bytes.Buffer
	cfg := bench.Config{
		SyncModes: []string{bench.SyncInterval}, FanoutSizes: []int{100}, LatencyTriggers: 20,
		TimerRuns: 50, TimerDelay: 300 * time.Millisecond, APIClients: 4, APIOps: 200, SeedClients: 8,
		Timeout:      2 * time.Minute,
		WorkDir:      t.TempDir(),
		Progress:     &progress,
		ServeCommand: func() *exec.Cmd { return testchild.Command() },
	}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if len(res.Modes) != 1 {
		t.Fatalf("%d modes", len(res.Modes))
	}
	m := res.Modes[0]
	if a := m.Audience; a == nil || a.Subscribers != 100 || a.Requests != 100+100+50 {
		t.Errorf("audience %+v", a)
	}
	if len(m.Fanout) != 1 || m.Fanout[0].Messages != 100 || m.Fanout[0].Duplicates != 0 || m.Fanout[0].RunsPerS <= 0 {
		t.Errorf("fanout %+v", m.Fanout)
	}
	if l := m.Latency; l == nil || l.Triggers != 20 || !(l.P50Ms > 0 && l.P50Ms <= l.P99Ms) {
		t.Errorf("latency %+v", l)
	}
	if tm := m.Timers; tm == nil || tm.Runs != 50 || tm.Early != 0 || tm.LateP50Ms < 0 {
		t.Errorf("timers %+v", tm)
	}
	if a := m.API; a == nil || a.Violations != 0 || a.UpsertsPerS <= 0 || a.GetsPerS <= 0 || a.TotalPuts != 400 {
		t.Errorf("api %+v", a)
	}
	if p := m.Fanout[0].Process; p.PeakRSSBytes == 0 || p.ServeCPUSeconds <= 0 || p.PeakAnonBytes == 0 || p.PeakAnonBytes > p.PeakRSSBytes {
		t.Errorf("no process figures: %+v", m.Fanout[0].Process)
	}
	// The JSON result and the text report carry the figures.
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	for _, want := range []string{"### Fan-out", "### Latency", "### Timers", "### API", "| interval | 100 |"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
}
