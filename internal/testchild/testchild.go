// Package testchild runs herald serve as a child process of a test: the
// test binary re-executes itself, and its TestMain serves instead of
// running the tests.
//
// # Basics
//
// A package whose tests kill, restart or measure a separate herald serve
// process calls [Main] from its TestMain, then starts children with
// [Command]:
//
//	func TestMain(m *testing.M) { testchild.Main(m, nil) }
//
//	p := testchild.Start(t, addr, "HERALD_DATA_DIR="+dir) // ready to serve
//	p.Kill()                                             // SIGKILL, a lost node
//
// or, to drive the process itself, [Command]:
//
//	cmd := testchild.Command("HERALD_DATA_DIR="+dir, "HERALD_HTTP_ADDR="+addr)
//
// A child is the test binary built without the race detector: when the
// tests run under -race, Main builds the package's test binary once more
// without it (go test -c, from the build cache after the first time) and
// children run that copy. A child then runs at the speed herald serve
// runs in production, so what a test measures of it (the time a crash
// takes to recover) is the service's, not the race detector's; the
// service's own code keeps its race coverage in the in-process tests.
// Without a go command on PATH children run the test binary itself.
//
// A child reads its configuration from the environment, as herald serve
// does, logs warnings and errors to stderr, prints READY on stdout once
// started, and drains on SIGTERM or an interrupt.
//
// # Caveats
//
// A child is not the herald command: it reads no flags and starts no pprof
// server. Whoever starts a child owns it: kill or stop it in t.Cleanup.
package testchild

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// Env, set in a test binary's environment, makes Main serve instead of
// running the tests.
const Env = "HERALD_TEST_CHILD_SERVE"

// drainTimeout bounds a child's drain after SIGTERM.
const drainTimeout = 30 * time.Second

// Main is the body of a TestMain. In a child (Env set) it serves until
// stopped and exits: 0 after a drain, 1 when the service failed to start or
// stopped by itself. Otherwise it runs the tests and exits with their
// status. tune adjusts the child's configuration after it is read from the
// environment; nil leaves it as read.
func Main(m *testing.M, tune func(*service.Config)) {
	if os.Getenv(Env) != "" {
		os.Exit(serve(tune))
	}
	code := m.Run()
	if childDir != "" {
		os.RemoveAll(childDir)
	}
	os.Exit(code)
}

var (
	childOnce sync.Once
	childBin  string // the binary children run
	childDir  string // holds childBin when Main built it; removed at exit
)

// binary returns the binary children run: the test binary itself, or,
// when it was built with the race detector, a copy of it built without.
func binary() string {
	childOnce.Do(func() {
		childBin = os.Args[0]
		if !raceEnabled {
			return
		}
		goCmd, err := exec.LookPath("go")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testchild: no go command; children run under the race detector:", err)
			return
		}
		dir, err := os.MkdirTemp("", "testchild-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "testchild:", err)
			return
		}
		bin := filepath.Join(dir, "child.test")
		// go test runs a test binary in its package's directory: "." is
		// the package whose TestMain called Main.
		// No DWARF: a third of the link, which nothing here reads.
		build := exec.Command(goCmd, "test", "-c", "-ldflags=-w", "-o", bin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "testchild: building the child without the race detector failed; children run under it:", err)
			os.RemoveAll(dir)
			return
		}
		childBin, childDir = bin, dir
	})
	return childBin
}

// Command returns the command that runs the test binary (see binary) as a
// child, running no tests, with this process's environment plus Env and
// env ("KEY=value" each). Its output is not redirected.
func Command(env ...string) *exec.Cmd {
	cmd := exec.Command(binary(), "-test.run=^$")
	cmd.Env = append(append(os.Environ(), Env+"=1"), env...)
	return cmd
}

// serve is the child: herald serve configured from the environment and
// tune. It returns the exit code.
func serve(tune func(*service.Config)) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := service.LoadConfig(os.Getenv, service.Flags{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if tune != nil {
		tune(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	svc, err := service.Start(ctx, cfg, logger)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("READY")
	code := 0
	select {
	case <-ctx.Done():
	case err := <-svc.Done():
		fmt.Fprintln(os.Stderr, "service stopped:", err)
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	_ = svc.Shutdown(sctx)
	return code
}

// Proc is a started child: a herald serve process serving on Addr.
type Proc struct {
	Cmd  *exec.Cmd
	Addr string
}

// Start starts a child serving on the loopback address addr (env holds
// its other settings, HERALD_DATA_DIR among them) and returns once it
// answers GET /readyz with 200: started, its projections caught up. The
// child is killed when the test ends, if it still runs.
func Start(t testing.TB, addr string, env ...string) *Proc {
	t.Helper()
	cmd := Command(append(env, "HERALD_HTTP_ADDR="+addr)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{Cmd: cmd, Addr: addr}
	t.Cleanup(p.Kill)
	ready, gone := make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(gone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "READY" {
				ready <- struct{}{}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-gone:
		// Its stdout closed: it exited (its error is on stderr).
		t.Fatal("testchild: the child exited before it started")
	case <-time.After(testwait.HangGuard):
		t.Fatal("testchild: the child did not start")
	}
	deadline := time.Now().Add(testwait.HangGuard)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("testchild: the child is not ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the child with SIGKILL, no drain (a lost node), and waits
// for it to exit. Killing a child that exited already does nothing.
func (p *Proc) Kill() {
	if p.Cmd.ProcessState == nil {
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		_ = p.Cmd.Wait()
	}
}
