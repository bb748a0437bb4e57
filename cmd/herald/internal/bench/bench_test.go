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

	"github.com/heraldhq/herald/cmd/herald/internal/bench"
	"github.com/heraldhq/herald/internal/testchild"
	"github.com/heraldhq/herald/service"
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
	testchild.Main(m, func(cfg *service.Config) {
		// The recovery test's child: work a killed process held comes
		// back within seconds, not herald serve's 15.
		if v := os.Getenv(testAckWaitEnv); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				panic(err)
			}
			cfg.AckWait, cfg.FanoutBackstop = d, d
			// A send the kill cut is taken over after its lease: the
			// shortest delivery allows, not a minute.
			cfg.DeliverySendTimeout, cfg.DeliveryLease = d, d+10*time.Second
		}
	})
}

// testAckWaitEnv gives a child the AckWait (and fan-out backstop, and send
// timeout; its delivery lease is 10 s more) of the recovery test.
const testAckWaitEnv = "HERALD_BENCH_TEST_ACK_WAIT"

// TestExternalNATS: with a NATS process of its own, herald serve connects
// to it (it keeps no JetStream store of its own) and the NATS process is
// measured apart.
func TestExternalNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herald serve and NATS processes")
	}
	t.Parallel() // each bench has its own serve, sink and Bridge; they mostly wait on them
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
	t.Parallel() // each bench has its own serve, sink and Bridge; they mostly wait on them
	var progress bytes.Buffer
	cfg := bench.Config{
		// Every scenario but recovery, which has a test of its own.
		Scenarios:          []string{bench.ScenarioFanout, bench.ScenarioLatency, bench.ScenarioIndividual, bench.ScenarioTimers, bench.ScenarioAPI},
		IndividualTriggers: 60, IndividualClients: 8,
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
	if d := m.Fanout[0].Deciles; len(d) != 10 || d[9].Messages != 100 || d[9].AtMs != m.Fanout[0].LastMs {
		t.Errorf("deciles %+v, last message at %.1f ms", d, m.Fanout[0].LastMs)
	}
	if l := m.Latency; l == nil || l.Triggers != 20 || !(l.P50Ms > 0 && l.P50Ms <= l.P99Ms) {
		t.Errorf("latency %+v", l)
	}
	checkIndividual(t, m.Individual, 60, 8, 2)
	// One send step: two Bridge calls a run (the step, then completion).
	if f := m.Fanout[0]; f.BridgeCalls < 200 || f.ServeCPUMsPerCall <= 0 {
		t.Errorf("fanout Bridge calls %d, %.3f ms each", f.BridgeCalls, f.ServeCPUMsPerCall)
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
	for _, want := range []string{"### Fan-out", "### Latency", "### Individual", "### Timers", "### API", "| interval | 100 |", "one `send` step per run"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
}

// checkIndividual checks the individual scenario's report: every trigger's
// message once, latencies in order, runs/s and CPU per run and per Bridge
// call (callsPerRun a run at least).
func checkIndividual(t *testing.T, in *bench.IndividualResult, n, clients int, callsPerRun int64) {
	t.Helper()
	switch {
	case in == nil:
		t.Fatal("no individual result")
	case in.Triggers != n || in.Clients != clients || in.Messages != n || in.Duplicates != 0:
		t.Errorf("individual: %+v", in)
	case !(in.P50Ms > 0 && in.P50Ms <= in.P95Ms && in.P95Ms <= in.P99Ms && in.P99Ms <= in.MaxMs):
		t.Errorf("individual latencies: %+v", in)
	case in.RunsPerS <= 0 || in.PostsSeconds <= 0 || in.LastMs <= 0 || in.PostP50Ms <= 0:
		t.Errorf("individual rates: %+v", in)
	case in.BridgeCalls < callsPerRun*int64(n) || in.ServeCPUMs <= 0 || in.ServeCPUMsPerCall <= 0 || in.ServeCPUMsPerCall >= in.ServeCPUMs:
		t.Errorf("individual: %d Bridge calls for %d runs (want at least %d each), %.3f ms CPU a run, %.3f a call",
			in.BridgeCalls, n, callsPerRun, in.ServeCPUMs, in.ServeCPUMsPerCall)
	}
}

// TestTwoSteps: with Steps 2 the scenarios that send run a `run` step
// before the send: three Bridge calls a run, each message still once.
func TestTwoSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts herald serve processes")
	}
	t.Parallel() // each bench has its own serve, sink and Bridge; they mostly wait on them
	var progress bytes.Buffer
	cfg := bench.Config{
		Scenarios: []string{bench.ScenarioFanout, bench.ScenarioIndividual}, Steps: 2,
		SyncModes: []string{bench.SyncInterval}, FanoutSizes: []int{100}, IndividualTriggers: 60, IndividualClients: 64,
		SeedClients: 8, Timeout: 2 * time.Minute, WorkDir: t.TempDir(), Progress: &progress,
		ServeCommand: func() *exec.Cmd { return testchild.Command() },
	}
	res, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	m := res.Modes[0]
	if f := m.Fanout; len(f) != 1 || f[0].Messages != 100 || f[0].Duplicates != 0 || f[0].BridgeCalls < 300 {
		t.Errorf("fanout %+v", f)
	}
	checkIndividual(t, m.Individual, 60, 64, 3)
	var text bytes.Buffer
	res.WriteText(&text)
	if res.Steps != 2 || !strings.Contains(text.String(), "a `run` step (a record of ~200 bytes) then a `send` step per run") {
		t.Errorf("the report does not say the workflow has two steps:\n%s", text.String())
	}
}

// TestRecovery: herald serve killed half-way through a fan-out is
// restarted, and every subscriber gets its message exactly once; the
// report says when, against AckWait + 5 s.
func TestRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, kills and restarts herald serve processes")
	}
	t.Parallel() // each bench has its own serve, sink and Bridge; they mostly wait on them
	const ackWait = 2 * time.Second
	var progress bytes.Buffer
	cfg := bench.Config{
		Scenarios: []string{bench.ScenarioRecovery}, Steps: 2, RecoveryRuns: 400, RecoveryAckWait: ackWait,
		SyncModes: []string{bench.SyncInterval}, SeedClients: 8, Timeout: 2 * time.Minute, WorkDir: t.TempDir(), Progress: &progress,
		ServeCommand: func() *exec.Cmd { return testchild.Command(testAckWaitEnv + "=" + ackWait.String()) },
	}
	began := time.Now()
	res, err := bench.Run(context.Background(), cfg)
	if res == nil || len(res.Modes) != 1 || res.Modes[0].Recovery == nil {
		t.Fatalf("no recovery result: %v\nprogress:\n%s", err, progress.String())
	}
	rc := res.Modes[0].Recovery
	t.Logf("recovery: %+v (in %v)", rc, time.Since(began))
	// The scenario fails loudly exactly when a message was lost or
	// repeated, and reports its figures either way.
	broken := rc.Duplicates > 0 || rc.Missing > 0
	if failed := err != nil && strings.Contains(err.Error(), "exactly-once broken"); failed != broken || (err != nil && !failed) {
		t.Fatalf("duplicates %d, missing %d, yet the bench answered %v\nprogress:\n%s", rc.Duplicates, rc.Missing, err, progress.String())
	}
	switch {
	case rc.Distinct != 400 || rc.Missing != 0 || rc.Messages != 400+rc.Duplicates:
		t.Errorf("a subscriber lost its message: %+v", rc)
	case rc.OtherMessageID != 0 || rc.SameMessageID != rc.Duplicates:
		// A copy with the first's Message-ID is a send taken over after
		// the kill (delivery's documented SMTP caveat: SMTP cannot say
		// whether a cut-off send went out); another Message-ID would be a
		// second send.
		t.Errorf("a subscriber got a second send: %+v", rc)
	case rc.KilledAtMessages < 200 || rc.KilledAtMessages >= 400:
		t.Errorf("killed with %d of 400 messages in, not half-way", rc.KilledAtMessages)
	case rc.ReadyMs <= 0 || rc.RecoveryMs < rc.ReadyMs || rc.AckWaitMs != 2000 || rc.BoundMs != 7000 || rc.WithinBound != (rc.RecoveryMs <= 7000):
		t.Errorf("recovery times: %+v", rc)
	case rc.ServeCPUSeconds <= 0 || rc.KilledPeakRSSBytes == 0 || rc.PeakRSSBytes == 0:
		t.Errorf("process figures: %+v", rc.Process)
	}
	if broken {
		t.Logf("the kill cut sends in flight: %d copies resent with their first Message-ID, the last %.1f s after the restart (bound %.1f s)",
			rc.SameMessageID, rc.RecoveryMs/1000, rc.BoundMs/1000)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if !strings.Contains(text.String(), "### Recovery") || !strings.Contains(text.String(), "| interval | 400 |") {
		t.Errorf("report:\n%s", text.String())
	}
}
