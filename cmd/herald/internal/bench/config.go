package bench

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"time"
)

// Scenario names, in the order Run executes them.
const (
	ScenarioFanout     = "fanout"
	ScenarioLatency    = "latency"
	ScenarioIndividual = "individual"
	ScenarioTimers     = "timers"
	ScenarioAPI        = "api"
	ScenarioRecovery   = "recovery"
)

// Scenarios lists every scenario in run order.
var Scenarios = []string{ScenarioFanout, ScenarioLatency, ScenarioIndividual, ScenarioTimers, ScenarioAPI, ScenarioRecovery}

// DefaultAckWait is herald serve's AckWait (engine.Config.AckWait's
// default, which no setting changes): how soon the work a killed process
// held is delivered again.
const DefaultAckWait = 15 * time.Second

// Sync modes of herald serve (HERALD_SYNC).
const (
	SyncInterval = "interval"
	SyncAlways   = "always"
)

// Config chooses what Run measures. The zero value of each field is
// documented; Full and Quick return the two standard profiles.
type Config struct {
	// Scenarios to run, a subset of Scenarios. Zero: all of them.
	Scenarios []string
	// SyncModes to run every scenario under. Zero: interval, always.
	SyncModes []string
	// Steps is the workflow of the scenarios that send: 1, a `send` step
	// alone (the smallest workflow that delivers); 2, a `run` step that returns a record of about
	// 200 bytes of JSON, then the `send` (three Bridge calls per run). The
	// timers and api scenarios do not send and ignore it. Zero: 1.
	Steps int
	// FanoutSizes are the audience sizes of the fan-out scenario. Zero:
	// 1,000, 10,000, 100,000.
	FanoutSizes []int
	// LatencyTriggers is how many sequential single-subscriber triggers
	// the latency scenario sends. Zero: 1,000.
	LatencyTriggers int
	// IndividualTriggers is how many single-subscriber triggers the
	// individual scenario sends, each to one of the first 1,000
	// subscribers in turn. Zero: 10,000.
	IndividualTriggers int
	// IndividualClients is how many clients send them at once, each
	// posting its next trigger as soon as the last one is answered. Zero:
	// 64.
	IndividualClients int
	// RecoveryRuns is the audience of the recovery scenario's fan-out,
	// whose herald serve is killed (SIGKILL) once half its messages
	// arrived. Zero: 10,000.
	RecoveryRuns int
	// RecoveryAckWait is the AckWait of the herald serve measured: the
	// recovery's bound is RecoveryAckWait + 5 s, and duplicates are
	// watched for until RecoveryAckWait + 2 s after the restart at least.
	// Zero: DefaultAckWait.
	RecoveryAckWait time.Duration
	// TimerRuns is how many runs the timers scenario puts to sleep at
	// once (one topic trigger). Zero: 10,000.
	TimerRuns int
	// TimerDelay is each timer run's delay. Zero: 2s.
	TimerDelay time.Duration
	// TimerSpread, when set, adds to each run's delay a share of it that
	// depends on the subscriber, spreading the wakes over TimerSpread
	// instead of the time the trigger's fan-out took: a wake rate the
	// resumes can keep up with. Zero: every run delays exactly TimerDelay,
	// so the wakes come as fast as the fan-out made the runs.
	TimerSpread time.Duration
	// APIClients is how many concurrent clients the api scenario runs.
	// Zero: 16.
	APIClients int
	// APIOps is how many requests each phase of the api scenario makes.
	// Zero: 20,000.
	APIOps int
	// SeedClients is how many concurrent clients set up the audience
	// through the API. Zero: 32.
	SeedClients int
	// WorkDir holds a data directory per sync mode (and the servers'
	// logs). Zero: a new temporary directory, removed afterwards unless
	// Keep.
	WorkDir string
	// Keep leaves the work directory in place.
	Keep bool
	// ProfileDir, when set, receives a CPU and a heap profile of herald
	// serve for each scenario (needs ServeCommand to honour
	// HERALD_PPROF_ADDR, as `herald serve` does). Zero: no profiles.
	ProfileDir string
	// ProfileSeconds is the length of each CPU profile, started with the
	// scenario. Zero: 20.
	ProfileSeconds int
	// Timeout bounds the wait for one scenario's last message. Zero: 10
	// minutes.
	Timeout time.Duration
	// ServeCommand returns the command that runs herald serve; Run adds
	// the HERALD_* environment (data dir, address, sync mode) to it. It
	// must print nothing on stdout that matters, and answer /readyz once
	// ready. Required.
	ServeCommand func() *exec.Cmd
	// NATSCommand, when set, returns the command of a NATS process of its
	// own for each scenario (Run adds NATSEnv; the process must call
	// ServeNATS), which herald serve connects to and which is measured
	// apart: the production layout. Zero: herald serve's embedded NATS.
	NATSCommand func() *exec.Cmd
	// Progress receives a line now and then while Run works. Zero:
	// discarded.
	Progress io.Writer
}

// Full is the complete suite at its full sizes (it takes a while).
func Full() Config {
	return Config{
		Scenarios: Scenarios, SyncModes: []string{SyncInterval, SyncAlways}, Steps: 1,
		FanoutSizes: []int{1000, 10000, 100000}, LatencyTriggers: 1000,
		IndividualTriggers: 10000, IndividualClients: 64, RecoveryRuns: 10000,
		TimerRuns: 10000, TimerDelay: 2 * time.Second, APIClients: 16, APIOps: 20000,
	}
}

// Quick is a profile of a few minutes: the same scenarios, smaller.
func Quick() Config {
	return Config{
		Scenarios: Scenarios, SyncModes: []string{SyncInterval, SyncAlways}, Steps: 1,
		FanoutSizes: []int{1000, 10000}, LatencyTriggers: 200,
		IndividualTriggers: 1000, IndividualClients: 64, RecoveryRuns: 2000,
		TimerRuns: 2000, TimerDelay: 2 * time.Second, APIClients: 16, APIOps: 3000,
	}
}

func (c *Config) setDefaults() {
	full := Full()
	if len(c.Scenarios) == 0 {
		c.Scenarios = full.Scenarios
	}
	if len(c.SyncModes) == 0 {
		c.SyncModes = full.SyncModes
	}
	if len(c.FanoutSizes) == 0 {
		c.FanoutSizes = full.FanoutSizes
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Steps, 1)
	def(&c.IndividualTriggers, full.IndividualTriggers)
	def(&c.IndividualClients, full.IndividualClients)
	def(&c.RecoveryRuns, full.RecoveryRuns)
	if c.RecoveryAckWait == 0 {
		c.RecoveryAckWait = DefaultAckWait
	}
	def(&c.LatencyTriggers, full.LatencyTriggers)
	def(&c.TimerRuns, full.TimerRuns)
	def(&c.APIClients, full.APIClients)
	def(&c.APIOps, full.APIOps)
	def(&c.SeedClients, 32)
	def(&c.ProfileSeconds, 20)
	if c.TimerDelay == 0 {
		c.TimerDelay = full.TimerDelay
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// Validate reports every problem of c (after defaults) at once.
func (c Config) Validate() error {
	var errs []error
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios, s) {
			errs = append(errs, fmt.Errorf("bench: unknown scenario %q (known: %v)", s, Scenarios))
		}
	}
	for _, m := range c.SyncModes {
		if m != SyncInterval && m != SyncAlways {
			errs = append(errs, fmt.Errorf("bench: sync mode %q is neither %q nor %q", m, SyncInterval, SyncAlways))
		}
	}
	for _, n := range c.FanoutSizes {
		if n < 1 || n > 10_000_000 {
			errs = append(errs, fmt.Errorf("bench: fan-out size %d is not from 1 to 10,000,000", n))
		}
	}
	if c.Steps != 1 && c.Steps != 2 {
		errs = append(errs, fmt.Errorf("bench: steps %d is neither 1 nor 2", c.Steps))
	}
	if c.IndividualTriggers < 1 || c.IndividualClients < 1 || c.RecoveryRuns < 2 || c.RecoveryAckWait < 0 {
		errs = append(errs, errors.New("bench: individual triggers and clients must be positive, recovery runs at least 2"))
	}
	if c.LatencyTriggers < 1 || c.TimerRuns < 1 || c.APIClients < 1 || c.APIOps < c.APIClients || c.SeedClients < 1 {
		errs = append(errs, errors.New("bench: counts must be positive (and api ops at least the api clients)"))
	}
	if c.TimerSpread < 0 {
		errs = append(errs, fmt.Errorf("bench: timer spread %v is negative", c.TimerSpread))
	}
	if c.TimerDelay < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("bench: timer delay %v is under 100ms", c.TimerDelay))
	}
	if c.ServeCommand == nil {
		errs = append(errs, errors.New("bench: Config.ServeCommand is required"))
	}
	return errors.Join(errs...)
}

// runs reports whether scenario s is selected.
func (c Config) runs(s string) bool { return slices.Contains(c.Scenarios, s) }

// audienceSize is how many subscribers the selected scenarios need.
func (c Config) audienceSize() int {
	n := 0
	if c.runs(ScenarioFanout) {
		n = max(n, slices.Max(c.FanoutSizes))
	}
	if c.runs(ScenarioTimers) {
		n = max(n, c.TimerRuns)
	}
	if c.runs(ScenarioLatency) {
		n = max(n, min(c.LatencyTriggers, 1000))
	}
	if c.runs(ScenarioIndividual) {
		n = max(n, min(c.IndividualTriggers, 1000))
	}
	if c.runs(ScenarioRecovery) {
		n = max(n, c.RecoveryRuns)
	}
	return n
}

// topicSizes are the topics to set up: one per distinct audience size, the
// topic of size n holding the subscribers 0 … n-1.
func (c Config) topicSizes() []int {
	var sizes []int
	if c.runs(ScenarioFanout) {
		sizes = append(sizes, c.FanoutSizes...)
	}
	if c.runs(ScenarioTimers) {
		sizes = append(sizes, c.TimerRuns)
	}
	if c.runs(ScenarioRecovery) {
		sizes = append(sizes, c.RecoveryRuns)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}
