package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/heraldhq/herald/service"
)

// serveCmd is `herald serve`.
func serveCmd(fs *flag.FlagSet) action {
	var f service.Flags
	var memFlag string
	serveFlags(fs, &f, &memFlag)
	return func(ctx context.Context, _ []string, _, stderr io.Writer) error {
		return serve(ctx, f, memFlag, stderr)
	}
}

func serve(ctx context.Context, f service.Flags, memFlag string, stderr io.Writer) error {
	cfg, err := service.LoadConfig(os.Getenv, f)
	mem, memErr := resolveMemoryLimit(memFlag, os.Getenv)
	if err := errors.Join(err, memErr); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	logger := newLogger(stderr)
	previous, limit := mem.apply()
	defer debug.SetMemoryLimit(previous)
	logger.Info("memory limit", "limit", formatLimit(limit), "bytes", limit, "source", mem.source)
	if mem.ignored != "" {
		logger.Warn("memory limit: GOMEMLIMIT is set and wins; "+mem.ignored+" is ignored", "limit", formatLimit(limit))
	}
	gc := resolveGCPercent(os.Getenv)
	previousGC, gcNow := gc.apply()
	defer debug.SetGCPercent(previousGC)
	logger.Info("garbage collector", "gogc", gcNow, "source", gc.source)
	if c := cacheUnderLimit(cfg.CacheMiB, os.Getenv("HERALD_CACHE_MIB") != "", limit); c != cfg.CacheMiB {
		logger.Info("engine caches sized to the memory limit (HERALD_CACHE_MIB unset)", "cacheMiB", c)
		cfg.CacheMiB = c
	}
	if addr := os.Getenv("HERALD_PPROF_ADDR"); addr != "" {
		stop, err := startPprof(addr, logger)
		if err != nil {
			return fmt.Errorf("HERALD_PPROF_ADDR: %w", err)
		}
		defer stop()
	}
	svc, err := service.Start(ctx, cfg, logger)
	if err != nil {
		return err
	}
	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("signal received; draining")
	case runErr = <-svc.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.Shutdown(shutdownCtx); err != nil && runErr == nil {
		runErr = err
	}
	logger.Info("stopped")
	return runErr
}

// serveFlags declares serve's flags on fs into f and memoryLimit; their
// usage comes from the settings table, like serve --help.
func serveFlags(fs *flag.FlagSet, f *service.Flags, memoryLimit *string) {
	fs.StringVar(&f.HTTPAddr, "http", "", flagUsage("HERALD_HTTP_ADDR"))
	fs.StringVar(&f.DataDir, "data", "", flagUsage("HERALD_DATA_DIR"))
	fs.StringVar(&f.NATSURL, "nats-url", "", flagUsage("HERALD_NATS_URL"))
	fs.StringVar(&f.NATSCreds, "nats-creds", "", flagUsage("HERALD_NATS_CREDS"))
	fs.IntVar(&f.Replicas, "replicas", 0, flagUsage("HERALD_REPLICAS"))
	fs.StringVar(&f.Sync, "sync", "", flagUsage("HERALD_SYNC"))
	fs.StringVar(memoryLimit, "memory-limit", "", flagUsage(envMemoryLimit))
	fs.StringVar(&f.PublicURL, "public-url", "", flagUsage("HERALD_PUBLIC_URL"))
	fs.StringVar(&f.InboxOrigins, "inbox-origins", "", flagUsage("HERALD_INBOX_ORIGINS"))
}

// newLogger returns the process logger: JSON lines on stderr; the level
// comes from HERALD_LOG_LEVEL (debug, info, warn, error; default info).
func newLogger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("HERALD_LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
