package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/heraldhq/herald/service"
)

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	var f service.Flags
	fs := newFlagSet("serve")
	fs.StringVar(&f.HTTPAddr, "http", "", "REST API address (HERALD_HTTP_ADDR)")
	fs.StringVar(&f.DataDir, "data", "", "data directory (HERALD_DATA_DIR)")
	fs.StringVar(&f.NATSURL, "nats-url", "", "external NATS URLs, comma separated (HERALD_NATS_URL)")
	fs.StringVar(&f.NATSCreds, "nats-creds", "", "NATS credentials file (HERALD_NATS_CREDS)")
	fs.IntVar(&f.Replicas, "replicas", 0, "stream replicas (HERALD_REPLICAS)")
	fs.StringVar(&f.Sync, "sync", "", "interval or always (HERALD_SYNC)")
	memFlag := fs.String("memory-limit", "", "the Go runtime's soft memory limit, e.g. 500MiB or off (HERALD_MEMORY_LIMIT; GOMEMLIMIT, when set, wins)")
	fs.StringVar(&f.PublicURL, "public-url", "", "base URL at which browsers and mailbox providers reach this server, for unsubscribe links (HERALD_PUBLIC_URL)")
	fs.StringVar(&f.InboxOrigins, "inbox-origins", "", "origins whose pages may call the inbox API, comma separated, or * (HERALD_INBOX_ORIGINS)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("%w: serve: %v", errUsage, err)
	}
	cfg, err := service.LoadConfig(os.Getenv, f)
	mem, memErr := resolveMemoryLimit(*memFlag, os.Getenv)
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

// newLogger returns the process logger: JSON lines on stderr; the level
// comes from HERALD_LOG_LEVEL (debug, info, warn, error; default info).
func newLogger(w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("HERALD_LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}
