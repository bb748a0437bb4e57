package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// server is one herald serve child process.
type server struct {
	cmd       *exec.Cmd
	addr      string // API host:port
	pprofAddr string // empty: no pprof
	dataDir   string
	logFile   *os.File
	exited    chan struct{}

	// peak is the highest RSS seen by the sampler (bytes).
	mu      sync.Mutex
	peakRSS uint64
	// peakAnon is the highest sampled RssAnon: the process's own memory,
	// without the mapped pages of files (the projection file's page
	// cache, which VmRSS counts too).
	peakAnon uint64
	stopSmp  chan struct{}
	smpDone  chan struct{}
	// onGrowth (guarded by mu), when set, is called (on a goroutine of its own, one call
	// at a time) each time the sampled RSS or RssAnon passed by a tenth
	// the figure of its last call: a capture of what holds memory near the
	// peak.
	onGrowth func()
	grown    growth
}

// growth tells when a sampled figure grew by a tenth since it last did.
type growth struct{ rss, anon uint64 }

// note records a sample and reports whether RSS or RssAnon grew by more
// than a tenth (and 8 MiB) since the last sample it reported.
func (g *growth) note(rss, anon uint64) bool {
	grew := func(last, now uint64) bool { return now > last+max(last/10, 8<<20) }
	if !grew(g.rss, rss) && !grew(g.anon, anon) {
		return false
	}
	g.rss, g.anon = max(g.rss, rss), max(g.anon, anon)
	return true
}

// serveOptions is how startServer starts herald serve.
type serveOptions struct {
	dataDir, logPath, sync string
	pprof                  bool
	// natsURL (with masterKey) connects the process to that NATS; empty:
	// its embedded one.
	natsURL, masterKey string
	// adminToken is the process's admin token (HERALD_ADMIN_TOKEN): the
	// bench's own, so that it knows the process that answers is its child.
	adminToken string
}

// startServer starts herald serve as o says and waits until it is ready:
// /readyz answers 200 and the admin API takes o.adminToken. The port is
// picked free a moment before the child binds it; on a busy machine
// another process (a test's server, an outgoing connection) can take it
// between the two. A process that answers but refuses the token is not
// the child, and a child that exits failing to bind is started again on a
// new port, up to five times.
func startServer(ctx context.Context, cfg Config, o serveOptions) (*server, error) {
	for try := 1; ; try++ {
		s, err := startServerOnce(ctx, cfg, o)
		if !errors.Is(err, errPortTaken) || try == 5 {
			return s, err
		}
	}
}

// errPortTaken is a child that exited before it was ready, having failed
// to bind its port.
var errPortTaken = errors.New("bench: herald serve's port was taken")

// apiAddr picks the address of a child's API: freeAddr, or a test's
// choice.
var apiAddr = freeAddr

func startServerOnce(ctx context.Context, cfg Config, o serveOptions) (*server, error) {
	addr, err := apiAddr()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	logStart, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	s := &server{addr: addr, dataDir: o.dataDir, logFile: logFile, exited: make(chan struct{})}
	cmd := cfg.ServeCommand()
	cmd.Env = append(cmd.Environ(), "HERALD_DATA_DIR="+o.dataDir, "HERALD_HTTP_ADDR="+addr, "HERALD_SYNC="+o.sync,
		"HERALD_LOG_LEVEL=warn", "HERALD_NATS_URL="+o.natsURL, "HERALD_ADMIN_TOKEN="+o.adminToken,
		// One tenant drives the whole load: the per-tenant API rate limit
		// would measure itself, not the service.
		"HERALD_RATE_LIMIT=0")
	if o.natsURL != "" {
		cmd.Env = append(cmd.Env, "HERALD_MASTER_KEY="+o.masterKey)
		// The bench's Bridge and mail sink listen on loopback.
		cmd.Env = append(cmd.Env, "HERALD_ALLOW_PRIVATE_EGRESS=true")
	}
	if o.pprof {
		if s.pprofAddr, err = freeAddr(); err != nil {
			logFile.Close()
			return nil, err
		}
		cmd.Env = append(cmd.Env, "HERALD_PPROF_ADDR="+s.pprofAddr)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	s.cmd = cmd
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: start herald serve: %w", err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !s.ready(o.adminToken) {
		select {
		case <-s.exited:
			logFile.Close()
			if logSays(o.logPath, logStart, "address already in use") {
				return nil, fmt.Errorf("%w: %s", errPortTaken, addr)
			}
			return nil, fmt.Errorf("bench: herald serve exited before it was ready; see %s", o.logPath)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("bench: herald serve not ready after 2 minutes; see %s", o.logPath)
		}
	}
	return s, nil
}

// ready reports whether the process at s.addr is ready and takes
// adminToken: /readyz answers 200 and so does an admin request.
func (s *server) ready(adminToken string) bool {
	get := func(path, token string) bool {
		req, err := http.NewRequest("GET", "http://"+s.addr+path, nil)
		if err != nil {
			return false
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	return get("/readyz", "") && get("/v1/admin/tenants?limit=1", adminToken)
}

// logSays reports whether the log at path holds what past offset from.
func logSays(path string, from int64, what string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	return err == nil && bytes.Contains(b, []byte(what))
}

// freeAddr returns a loopback address with a port free at the moment.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop asks the process to drain (SIGTERM) and kills it after 60s.
func (s *server) stop() {
	s.stopSampler()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.logFile.Close()
}

// kill kills the process (SIGKILL: no drain, as a crash) and waits for it
// to be gone.
func (s *server) kill() {
	s.stopSampler()
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.logFile.Close()
}

// alive reports whether the process still runs.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// resetPeak makes VmHWM start again from the current RSS (Linux
// clear_refs "5") and starts sampling VmRSS every 50ms, the fallback where
// clear_refs is not allowed.
func (s *server) resetPeak() {
	s.stopSampler()
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.pid()), []byte("5"), 0)
	s.mu.Lock()
	s.peakRSS, s.peakAnon = 0, 0
	s.grown = growth{}
	s.mu.Unlock()
	s.stopSmp, s.smpDone = make(chan struct{}), make(chan struct{})
	var capturing atomic.Bool
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if st, err := procStatus(s.pid()); err == nil {
				s.mu.Lock()
				s.peakRSS = max(s.peakRSS, st["VmRSS"])
				s.peakAnon = max(s.peakAnon, st["RssAnon"])
				capture := s.onGrowth
				if capture != nil && !s.grown.note(st["VmRSS"], st["RssAnon"]) {
					capture = nil
				}
				s.mu.Unlock()
				if capture != nil && capturing.CompareAndSwap(false, true) {
					go func() {
						defer capturing.Store(false)
						capture()
					}()
				}
			}
			select {
			case <-t.C:
			case <-stop:
				return
			}
		}
	}(s.stopSmp, s.smpDone)
}

func (s *server) stopSampler() {
	if s.stopSmp != nil {
		close(s.stopSmp)
		<-s.smpDone
		s.stopSmp = nil
	}
}

// peak returns the peak RSS since resetPeak: the larger of VmHWM and the
// sampled VmRSS. Zero when /proc cannot be read.
func (s *server) peak() uint64 {
	s.mu.Lock()
	p := s.peakRSS
	s.mu.Unlock()
	if st, err := procStatus(s.pid()); err == nil {
		p = max(p, st["VmHWM"], st["VmRSS"])
	}
	return p
}

// peakAnonRSS returns the highest RssAnon sampled since resetPeak (Linux
// has no high-water mark of it; a peak between two samples is missed).
func (s *server) peakAnonRSS() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakAnon
}

// procStatus reads the kB fields of /proc/<pid>/status, in bytes.
func procStatus(pid int) (map[string]uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
				out[k] = n << 10
			}
		}
	}
	return out, nil
}

// cpuTime returns the user+system CPU time the process used so far.
func (s *server) cpuTime() time.Duration {
	d, _ := procCPU(s.pid())
	return d
}

// procCPU reads utime+stime of /proc/<pid>/stat (clock ticks of 10ms, the
// USER_HZ of every Linux build in use).
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; fields resume after its ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("bench: malformed /proc stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("bench: short /proc stat")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// selfCPU returns the CPU time this process (the Bridge, the sink and the
// clients) used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// diskUsage returns the bytes allocated on disk under dir (st_blocks, as
// du counts: sparse regions of a file cost nothing).
func diskUsage(dir string) uint64 {
	var total uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += uint64(st.Blocks) * 512
		} else {
			total += uint64(info.Size())
		}
		return nil
	})
	return total
}

// loadAvg returns the 1-minute load average, or -1.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
