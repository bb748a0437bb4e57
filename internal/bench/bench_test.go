package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/internal/testchild"
)

// TestMain lets the test binary run as `herald serve`, the child the bench
// measures, configured from the environment the bench sets; or as the NATS
// process of an external-NATS run.
func TestMain(m *testing.M) {
	if os.Getenv(bench.NATSEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := bench.ServeNATS(ctx, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testchild.Main(m, nil)
}

// TestExternalNATS: with a NATS process of its own, herald serve connects
// to it (it keeps no JetStream store of its own) and the NATS process is
// measured apart.
func TestExternalNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herald serve and NATS processes")
	}
	var progress bytes.Buffer
	work := t.TempDir()
	cfg := bench.Config{
		Scenarios: []string{bench.ScenarioFanout}, SyncModes: []string{bench.SyncInterval}, FanoutSizes: []int{100},
		SeedClients: 8, Timeout: 2 * time.Minute, WorkDir: work, Progress: &progress,
		ServeCommand: func() *exec.Cmd { return testchild.Command() },
		NATSCommand:  func() *exec.Cmd { return exec.Command(os.Args[0], "-test.run=^$") },
	}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	f := res.Modes[0].Fanout
	if len(f) != 1 || f[0].Messages != 100 || f[0].Duplicates != 0 {
		t.Fatalf("fanout %+v", f)
	}
	if p := f[0].Process; p.NATSPeakRSSBytes == 0 || p.NATSPeakAnonBytes == 0 || p.NATSCPUSeconds <= 0 || p.PeakRSSBytes == 0 {
		t.Errorf("no NATS figures: %+v", p)
	}
	data := filepath.Join(work, bench.SyncInterval, "data")
	if _, err := os.Stat(filepath.Join(data, "nats-external", "jetstream")); err != nil {
		t.Errorf("the NATS process kept no store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "nats")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("herald serve kept a JetStream store of its own: %v", err)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if strings.Contains(text.String(), "in serve") || !strings.Contains(text.String(), "NATS peak RSS") {
		t.Errorf("the report does not give the NATS process's figures:\n%s", text.String())
	}
}

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
