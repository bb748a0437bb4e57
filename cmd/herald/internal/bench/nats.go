package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/heraldhq/herald/embedded"
)

// NATSEnv, set in the environment of the process Config.NATSCommand
// starts, names the JetStream store directory: the process runs only a
// NATS server on it (ServeNATS) instead of its usual work.
const NATSEnv = "HERALD_BENCH_NATS_DIR"

// NATSPprofEnv, in the NATS process's environment, is the address its
// net/http/pprof listens on (`herald bench --nats-pprof`). Zero: none.
const NATSPprofEnv = "HERALD_BENCH_NATS_PPROF"

// natsSyncEnv carries the sync mode to the NATS process.
const natsSyncEnv = "HERALD_BENCH_NATS_SYNC"

// ServeNATS is the body of the process Config.NATSCommand starts: a
// JetStream server on loopback, the store in $HERALD_BENCH_NATS_DIR, that
// prints its client URL on stdout and stops when ctx ends. It is the NATS
// of production (a process of its own) for measuring herald serve alone.
func ServeNATS(ctx context.Context, stdout io.Writer) error {
	srv, err := embedded.Start(embedded.Config{StoreDir: os.Getenv(NATSEnv), Listen: true,
		SyncAlways: os.Getenv(natsSyncEnv) == SyncAlways})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	if _, err := fmt.Fprintln(stdout, srv.ClientURL()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// startNATS starts the NATS process of a scenario on dir and waits for its
// URL (the process's addr).
func startNATS(ctx context.Context, cfg Config, dir, logPath, sync string) (*server, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := cfg.NATSCommand()
	cmd.Env = append(cmd.Environ(), NATSEnv+"="+dir, natsSyncEnv+"="+sync)
	cmd.Stderr = logFile
	out, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	s := &server{cmd: cmd, dataDir: dir, logFile: logFile, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: start NATS: %w", err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			urls <- strings.TrimSpace(sc.Text())
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.addr = <-urls:
		return s, nil
	case <-s.exited:
		logFile.Close()
		return nil, fmt.Errorf("bench: NATS exited before it was ready; see %s", logPath)
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	case <-time.After(time.Minute):
		s.stop()
		return nil, fmt.Errorf("bench: NATS not ready after a minute; see %s", logPath)
	}
}
