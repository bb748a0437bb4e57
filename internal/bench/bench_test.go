package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/service"
)

// childEnv makes the test binary run herald serve (the child the bench
// measures) instead of the tests.
const childEnv = "HERALD_BENCH_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childServe()
		return
	}
	os.Exit(m.Run())
}

// childServe is `herald serve` in this binary: configured from the
// environment the bench sets, drained on SIGTERM.
func childServe() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := service.LoadConfig(os.Getenv, service.Flags{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	svc, err := service.Start(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	select {
	case <-ctx.Done():
	case <-svc.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = svc.Shutdown(sctx)
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
		Timeout:  2 * time.Minute,
		WorkDir:  t.TempDir(),
		Progress: &progress,
		ServeCommand: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=1")
			return cmd
		},
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
	if m.Fanout[0].PeakRSSBytes == 0 || m.Fanout[0].ServeCPUSeconds <= 0 {
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
