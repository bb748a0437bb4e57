package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/cmd/herald/internal/bench"
)

// benchCmd runs the end-to-end benchmark (cmd/herald/internal/bench): herald serve as
// a child process, a Bridge and an SMTP sink in this one, on loopback.
func benchCmd(fs *flag.FlagSet) action {
	quick := fs.Bool("quick", false, "the quick profile: smaller sizes, a few minutes")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout (progress stays on stderr)")
	scenarios := fs.String("scenarios", "", "comma-separated subset of "+strings.Join(bench.Scenarios, ",")+" (default: all)")
	steps := fs.Int("steps", 1, "workflow of the scenarios that send: 1, a send step; 2, a run step returning a ~200-byte record, then the send")
	syncModes := fs.String("sync", "", "comma-separated sync modes, interval,always (default: both)")
	sizes := fs.String("sizes", "", "fan-out audience sizes, comma-separated (default 1000,10000,100000; quick 1000,10000)")
	latencyN := fs.Int("latency-n", 0, "sequential triggers of the latency scenario (default 1000; quick 200)")
	individualN := fs.Int("individual-n", 0, "single-subscriber triggers of the individual scenario (default 10000; quick 1000)")
	individualClients := fs.Int("individual-clients", 0, "concurrent clients of the individual scenario (default 64)")
	recoveryN := fs.Int("recovery-n", 0, "subscribers of the recovery scenario's fan-out, killed half-way (default 10000; quick 2000)")
	recoveryAckWait := fs.Duration("recovery-ack-wait", 0, "AckWait of the herald serve measured: the recovery's bound is this + 5s (default 15s, herald serve's)")
	timersN := fs.Int("timers-n", 0, "sleeping runs of the timers scenario (default 10000; quick 2000)")
	timerDelay := fs.Duration("timer-delay", 0, "each timer run's delay (default 2s)")
	timerSpread := fs.Duration("timer-spread", 0, "spread the timer runs' wakes over this much more (default 0: all delay exactly --timer-delay)")
	apiClients := fs.Int("api-clients", 0, "concurrent clients of the api scenario (default 16)")
	apiOps := fs.Int("api-ops", 0, "requests per phase of the api scenario (default 20000; quick 3000)")
	seedClients := fs.Int("seed-clients", 0, "concurrent clients setting up the audience (default 32)")
	workDir := fs.String("workdir", "", "directory for the data directories and server logs (default: a temporary one)")
	keep := fs.Bool("keep", false, "keep the work directory")
	profileDir := fs.String("profile", "", "write CPU and heap profiles of herald serve per scenario into this directory")
	profileSecs := fs.Int("profile-seconds", 0, "length of each CPU profile (default 20)")
	timeout := fs.Duration("timeout", 0, "bound on one scenario (default 10m)")
	natsMode := fs.String("nats", "embedded", "embedded: NATS inside herald serve (the default deployment); external: NATS in a process of its own, measured apart (production's layout)")
	natsPprof := fs.String("nats-pprof", "", "with --nats external: serve net/http/pprof of the NATS process on this address, to profile JetStream's memory and CPU apart (never expose it)")
	return func(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
		if os.Getenv(bench.NATSEnv) != "" {
			// The NATS process of `herald bench --nats external`.
			if addr := os.Getenv(bench.NATSPprofEnv); addr != "" {
				stop, err := startPprof(addr, slog.New(slog.NewTextHandler(stderr, nil)))
				if err != nil {
					return fmt.Errorf("--nats-pprof: %w", err)
				}
				defer stop()
			}
			return bench.ServeNATS(ctx, stdout)
		}
		cfg := bench.Full()
		if *quick {
			cfg = bench.Quick()
		}
		var err error
		if *scenarios != "" {
			cfg.Scenarios = splitList(*scenarios)
		}
		if *syncModes != "" {
			cfg.SyncModes = splitList(*syncModes)
		}
		if *sizes != "" {
			if cfg.FanoutSizes, err = parseInts(*sizes); err != nil {
				return badUsage("--sizes: %v", err)
			}
		}
		set := func(dst *int, v int) {
			if v != 0 {
				*dst = v
			}
		}
		cfg.Steps = *steps
		set(&cfg.IndividualTriggers, *individualN)
		set(&cfg.IndividualClients, *individualClients)
		set(&cfg.RecoveryRuns, *recoveryN)
		cfg.RecoveryAckWait = *recoveryAckWait
		set(&cfg.LatencyTriggers, *latencyN)
		set(&cfg.TimerRuns, *timersN)
		set(&cfg.APIClients, *apiClients)
		set(&cfg.APIOps, *apiOps)
		set(&cfg.SeedClients, *seedClients)
		set(&cfg.ProfileSeconds, *profileSecs)
		if *timerDelay != 0 {
			cfg.TimerDelay = *timerDelay
		}
		cfg.TimerSpread = *timerSpread
		cfg.Timeout = *timeout
		cfg.WorkDir, cfg.Keep, cfg.ProfileDir = *workDir, *keep, *profileDir
		cfg.Progress = stderr
		if cfg.ServeCommand, err = bench.DefaultServeCommand(); err != nil {
			return err
		}
		switch *natsMode {
		case "embedded":
			if *natsPprof != "" {
				return badUsage("--nats-pprof needs --nats external (embedded, NATS is inside herald serve: use HERALD_PPROF_ADDR)")
			}
		case "external":
			if cfg.NATSCommand, err = bench.DefaultNATSCommand(); err != nil {
				return err
			}
			if *natsPprof != "" {
				natsCommand := cfg.NATSCommand
				cfg.NATSCommand = func() *exec.Cmd {
					cmd := natsCommand()
					cmd.Env = append(cmd.Environ(), bench.NATSPprofEnv+"="+*natsPprof)
					return cmd
				}
			}
		default:
			return badUsage("--nats: %q is not embedded or external", *natsMode)
		}
		res, runErr := bench.Run(ctx, cfg)
		if res != nil {
			res.Command = "herald bench"
			fs.Visit(func(f *flag.Flag) {
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && f.Value.String() == "true" {
					res.Command += " --" + f.Name
				} else {
					res.Command += " --" + f.Name + " " + f.Value.String()
				}
			})
			if *asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				res.WriteText(stdout)
			}
		}
		return runErr
	}
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, v := range splitList(s) {
		n, err := strconv.Atoi(strings.ReplaceAll(v, "_", ""))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
