package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heraldhq/herald/secrets"
)

// Run measures every selected scenario under every selected sync mode and
// returns the figures. It fails on the first scenario that cannot finish
// (a lost or duplicated message, a read that missed a write, a timeout),
// returning what it measured so far.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	workDir := cfg.WorkDir
	if workDir == "" {
		d, err := os.MkdirTemp("", "herald-bench-")
		if err != nil {
			return nil, err
		}
		workDir = d
		if !cfg.Keep {
			defer os.RemoveAll(d)
		}
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	w, err := newWorld(cfg)
	if err != nil {
		return nil, err
	}
	defer w.close()
	res := &Result{Machine: machine(), StartedAt: time.Now().UTC(), Steps: cfg.Steps}
	began := time.Now()
	defer func() { res.Seconds = time.Since(began).Seconds() }()
	for _, mode := range cfg.SyncModes {
		dir := filepath.Join(workDir, mode)
		if _, err := os.Stat(dir); err == nil {
			return res, fmt.Errorf("bench: %s exists: give an empty work directory", dir)
		}
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			return res, err
		}
		r := &runner{cfg: cfg, w: w, sync: mode, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "serve.log")}
		mr, err := r.run(ctx)
		res.Modes = append(res.Modes, mr)
		if err != nil {
			return res, fmt.Errorf("bench: sync %s: %w", mode, err)
		}
	}
	return res, nil
}

// runner runs the scenarios of one sync mode.
type runner struct {
	cfg     Config
	w       *world
	sync    string
	dataDir string
	// adminToken is herald serve's admin token, the bench's choice.
	adminToken string
	logPath    string
	srv        *server
	// nats is the NATS process of the scenario with Config.NATSCommand;
	// masterKey the HERALD_MASTER_KEY herald serve then needs.
	nats      *server
	masterKey string
	t         *tenant
	// progressMu serialises progress lines: scenarios' tickers write
	// them from goroutines of their own.
	progressMu sync.Mutex
	// killing is set while the recovery scenario kills herald serve on
	// purpose: measure does not take the exit for a failure.
	killing atomic.Bool
	// cpuCarry is the CPU time of the herald serve processes killed so
	// far, which serveCPU adds to the running one's.
	cpuCarry time.Duration
}

// serveCPU returns the CPU time of herald serve on this data directory:
// the running process's and the killed ones'.
func (r *runner) serveCPU() time.Duration { return r.cpuCarry + r.srv.cpuTime() }

// sendWorkflow is the workflow of the scenarios that send (Config.Steps).
func (r *runner) sendWorkflow() string {
	if r.cfg.Steps == 2 {
		return wfRunSend
	}
	return wfSend
}

func (r *runner) progress(format string, args ...any) {
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	fmt.Fprintf(r.cfg.Progress, "[%s %s] %s\n", time.Now().Format("15:04:05"), r.sync, fmt.Sprintf(format, args...))
}

func (r *runner) run(ctx context.Context) (mr ModeResult, err error) {
	mr.Sync = r.sync
	defer r.stopAll()
	if err := r.restart(ctx); err != nil {
		return mr, err
	}
	if r.t, err = r.w.setUpTenant(ctx, r.srv.url(), r.adminToken); err != nil {
		return mr, fmt.Errorf("tenant set-up: %w", err)
	}
	if n := r.cfg.audienceSize(); n > 0 {
		a := &AudienceResult{}
		if a.Process, err = r.measure(ctx, "audience", false, func(ctx context.Context) error {
			return r.seed(ctx, n, a)
		}); err != nil {
			return mr, err
		}
		mr.Audience = a
	}
	if r.cfg.runs(ScenarioFanout) {
		for _, n := range r.cfg.FanoutSizes {
			f := FanoutResult{Subscribers: n}
			if err := scenario(ctx, r, fmt.Sprintf("fanout-%d", n), &f, r.fanout); err != nil {
				return mr, err
			}
			f.ServeCPUMs = f.ServeCPUSeconds * 1000 / float64(n)
			f.DiskPerRun = float64(f.DiskBytes) / float64(n)
			mr.Fanout = append(mr.Fanout, f)
		}
	}
	if r.cfg.runs(ScenarioLatency) {
		l := &LatencyResult{Triggers: r.cfg.LatencyTriggers}
		if err := scenario(ctx, r, "latency", l, r.latency); err != nil {
			return mr, err
		}
		l.DiskPerRun = float64(l.DiskBytes) / float64(l.Triggers)
		mr.Latency = l
	}
	if r.cfg.runs(ScenarioIndividual) {
		in := &IndividualResult{Triggers: r.cfg.IndividualTriggers, Clients: r.cfg.IndividualClients}
		if err := scenario(ctx, r, "individual", in, r.individual); err != nil {
			return mr, err
		}
		in.ServeCPUMs = in.ServeCPUSeconds * 1000 / float64(in.Triggers)
		in.DiskPerRun = float64(in.DiskBytes) / float64(in.Triggers)
		mr.Individual = in
	}
	if r.cfg.runs(ScenarioTimers) {
		t := &TimersResult{Runs: r.cfg.TimerRuns, DelayMs: ms(r.cfg.TimerDelay), SpreadMs: ms(r.cfg.TimerSpread)}
		if err := scenario(ctx, r, "timers", t, r.timers); err != nil {
			return mr, err
		}
		t.DiskPerRun = float64(t.DiskBytes) / float64(t.Runs)
		mr.Timers = t
	}
	if r.cfg.runs(ScenarioAPI) {
		a := &APIResult{Clients: r.cfg.APIClients}
		if err := scenario(ctx, r, "api", a, r.api); err != nil {
			return mr, err
		}
		a.DiskPerPut = float64(a.DiskBytes) / float64(max(1, a.TotalPuts))
		mr.API = a
	}
	if r.cfg.runs(ScenarioRecovery) {
		rc := &RecoveryResult{Runs: r.cfg.RecoveryRuns}
		// The recovery is measured, not failed, against its bound; a lost
		// or duplicated message fails it.
		err := scenario(ctx, r, "recovery", rc, r.recovery)
		mr.Recovery = rc
		if err != nil {
			return mr, err
		}
	}
	return mr, nil
}

// stopAll stops herald serve, then its NATS process, if running.
func (r *runner) stopAll() {
	if r.srv != nil {
		r.srv.stop()
		r.srv = nil
	}
	if r.nats != nil {
		r.nats.stop()
		r.nats = nil
	}
}

// restart stops herald serve (and its NATS process) if running and starts
// them again on the same data directory.
func (r *runner) restart(ctx context.Context) error {
	r.stopAll()
	natsURL := ""
	if r.cfg.NATSCommand != nil {
		var err error
		if r.masterKey == "" {
			// herald serve requires HERALD_MASTER_KEY with an external NATS.
			key, _, err := secrets.LoadOrCreateKeyFile(filepath.Join(r.dataDir, "bench-master.key"))
			if err != nil {
				return err
			}
			r.masterKey = base64.StdEncoding.EncodeToString(key)
		}
		if r.nats, err = startNATS(ctx, r.cfg, filepath.Join(r.dataDir, "nats-external"), r.logPath, r.sync); err != nil {
			return err
		}
		natsURL = r.nats.addr
	}
	return r.startServe(ctx, natsURL)
}

// startServe starts herald serve on the data directory, connected to
// natsURL (empty: its embedded NATS), and points the tenant at it.
func (r *runner) startServe(ctx context.Context, natsURL string) error {
	if r.adminToken == "" {
		r.adminToken = "hadm_" + rand.Text()
	}
	srv, err := startServer(ctx, r.cfg, serveOptions{dataDir: r.dataDir, logPath: r.logPath, sync: r.sync,
		pprof: r.cfg.ProfileDir != "", natsURL: natsURL, masterKey: r.masterKey, adminToken: r.adminToken})
	if err != nil {
		return err
	}
	r.srv = srv
	if r.t != nil {
		r.t = r.t.rebind(srv.url())
	}
	return nil
}

// scenario measures run on res, a scenario's result, with herald serve
// started afresh, and records in res what the process used, failed run or
// not.
func scenario[R interface{ process() *Process }](ctx context.Context, r *runner, name string, res R,
	run func(context.Context, R) error) error {
	p, err := r.measure(ctx, name, true, func(ctx context.Context) error { return run(ctx, res) })
	*res.process() = p
	return err
}

// process returns p: through the results that embed it, scenario reaches
// their Process.
func (p *Process) process() *Process { return p }

// measure runs one scenario on a fresh herald serve process (when fresh)
// and reports what the process used meanwhile.
func (r *runner) measure(ctx context.Context, name string, fresh bool, fn func(context.Context) error) (Process, error) {
	if fresh {
		if err := r.restart(ctx); err != nil {
			return Process{}, err
		}
	}
	r.progress("%s: starting (herald serve pid %d, load %.2f)", name, r.srv.pid(), loadAvg())
	disk0, cpu0, self0, calls0 := diskUsage(r.dataDir), r.serveCPU(), selfCPU(), r.w.bridgeCalls.Load()
	if r.cfg.ProfileDir != "" {
		srv := r.srv
		srv.mu.Lock()
		srv.onGrowth = func() { r.capturePeak(srv, name) }
		srv.mu.Unlock()
	}
	r.srv.resetPeak()
	var natsCPU0 time.Duration
	if r.nats != nil {
		natsCPU0 = r.nats.cpuTime()
		r.nats.resetPeak()
	}
	var profDone <-chan error
	if r.cfg.ProfileDir != "" {
		profDone = r.profile(name)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	r.killing.Store(false)
	watch, exited := make(chan struct{}), r.srv.exited
	go func() {
		select {
		case <-exited:
			if !r.killing.Load() {
				cancel()
			}
		case <-watch:
		}
	}()
	err := fn(ctx)
	close(watch)
	if !r.srv.alive() {
		return Process{}, fmt.Errorf("%s: herald serve exited; see %s", name, r.logPath)
	}
	if r.nats != nil && !r.nats.alive() {
		return Process{}, fmt.Errorf("%s: NATS exited; see %s", name, r.logPath)
	}
	p := Process{PeakRSSBytes: r.srv.peak(), PeakAnonBytes: r.srv.peakAnonRSS(), ServeCPUSeconds: (r.serveCPU() - cpu0).Seconds(),
		BenchCPUSeconds: (selfCPU() - self0).Seconds(), LoadAvg: loadAvg(), BridgeCalls: r.w.bridgeCalls.Load() - calls0}
	if p.BridgeCalls > 0 {
		p.ServeCPUMsPerCall = p.ServeCPUSeconds * 1000 / float64(p.BridgeCalls)
	}
	if err != nil {
		// What the scenario found wrong comes with what it measured.
		return p, fmt.Errorf("%s: %w", name, err)
	}
	natsLine := ""
	if r.nats != nil {
		p.NATSPeakRSSBytes, p.NATSPeakAnonBytes = r.nats.peak(), r.nats.peakAnonRSS()
		p.NATSCPUSeconds = (r.nats.cpuTime() - natsCPU0).Seconds()
		natsLine = fmt.Sprintf("; NATS: peak RSS %.0f MB (anonymous %.0f MB), CPU %.1f s",
			mb(p.NATSPeakRSSBytes), mb(p.NATSPeakAnonBytes), p.NATSCPUSeconds)
	}
	if profDone != nil {
		r.saveHeap(name)
		if err := <-profDone; err != nil {
			r.progress("%s: CPU profile: %v", name, err)
		}
	}
	// Give the store a moment to write what it buffered before the size
	// is taken.
	time.Sleep(500 * time.Millisecond)
	p.DiskBytes = int64(diskUsage(r.dataDir)) - int64(disk0)
	r.progress("%s: done; peak RSS %.0f MB (anonymous %.0f MB), serve CPU %.1f s (%.3f ms per Bridge call, %d calls), bench CPU %.1f s, disk %+.1f MB, load %.2f%s",
		name, mb(p.PeakRSSBytes), mb(p.PeakAnonBytes), p.ServeCPUSeconds, p.ServeCPUMsPerCall, p.BridgeCalls, p.BenchCPUSeconds,
		float64(p.DiskBytes)/(1<<20), p.LoadAvg, natsLine)
	return p, nil
}

// profile fetches a CPU profile of herald serve for ProfileSeconds into
// ProfileDir/<sync>-<name>.cpu.pprof.
func (r *runner) profile(name string) <-chan error {
	done := make(chan error, 1)
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", r.srv.pprofAddr, r.cfg.ProfileSeconds)
	path := filepath.Join(r.cfg.ProfileDir, r.sync+"-"+name+".cpu.pprof")
	go func() { done <- fetch(url, path) }()
	return done
}

// capturePeak saves a heap profile of herald serve and a copy of its
// /proc smaps (which mappings the resident pages belong to) as
// ProfileDir/<sync>-<name>.peak.heap.pprof and .peak.smaps, each
// replacing the last: taken each time its memory grew by a tenth, the
// files left are the ones nearest the scenario's peak.
func (r *runner) capturePeak(srv *server, name string) {
	base := filepath.Join(r.cfg.ProfileDir, r.sync+"-"+name+".peak")
	if err := fetch(fmt.Sprintf("http://%s/debug/pprof/heap", srv.pprofAddr), base+".heap.pprof"); err != nil {
		r.progress("%s: peak heap profile: %v", name, err)
	}
	if smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", srv.pid())); err == nil {
		_ = os.WriteFile(base+".smaps", smaps, 0o644)
	}
}

func (r *runner) saveHeap(name string) {
	url := fmt.Sprintf("http://%s/debug/pprof/heap", r.srv.pprofAddr)
	if err := fetch(url, filepath.Join(r.cfg.ProfileDir, r.sync+"-"+name+".heap.pprof")); err != nil {
		r.progress("%s: heap profile: %v", name, err)
	}
}

func fetch(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

// machine describes this machine.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadAtStart: loadAvg()}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		var b []byte
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		m.Kernel = string(b)
	}
	if st, err := procMeminfo(); err == nil {
		m.MemTotalMB, m.MemFreeMB = st["MemTotal"]>>20, st["MemAvailable"]>>20
	}
	return m
}

func procMeminfo() (map[string]uint64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var n uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &n); err == nil {
			out[k] = n << 10
		}
	}
	return out, nil
}

// DefaultServeCommand runs `herald serve` from the running executable.
func DefaultServeCommand() (func() *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return func() *exec.Cmd { return exec.Command(exe, "serve") }, nil
}

// DefaultNATSCommand runs this executable's `bench` as the NATS process
// (with NATSEnv set, `herald bench` calls ServeNATS).
func DefaultNATSCommand() (func() *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return func() *exec.Cmd { return exec.Command(exe, "bench") }, nil
}
