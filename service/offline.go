package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
	"github.com/nats-io/nats.go"
)

// Offline is the event log opened by a one-shot tool (herald audit,
// herald rebuild) rather than by a serving process. Close it when done.
type Offline struct {
	// Log reads the streams; it never creates or changes them.
	Log *eventlog.Log

	lock *dirLock
	nats *embedded.Server
	nc   *nats.Conn
}

// OpenOffline opens the event log cfg names without serving anything.
//
// In embedded mode (no NATSURLs) it takes the data dir's lock (an error
// wrapping ErrDataDirInUse while `herald serve` runs on it) and starts the
// embedded NATS server on the data dir's store without a listener. With
// NATSURLs it connects to the cluster; lockDir then also takes the data
// dir's lock, for a tool that writes the local projections. A log with no
// streams is an error wrapping ErrNoEventLog.
func OpenOffline(ctx context.Context, cfg Config, lockDir bool) (_ *Offline, err error) {
	o := &Offline{}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if cfg.Embedded() || lockDir {
		if _, err := os.Stat(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("%w: data dir %s: %v", ErrNoEventLog, cfg.DataDir, err)
		}
		if o.lock, err = lockDataDir(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	if cfg.Embedded() {
		store := filepath.Join(cfg.DataDir, NATSDir)
		if _, err := os.Stat(store); err != nil {
			return nil, fmt.Errorf("%w: no embedded store at %s", ErrNoEventLog, store)
		}
		if o.nats, err = embedded.Start(embedded.Config{StoreDir: store}); err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		if o.nc, err = o.nats.Connect(); err != nil {
			return nil, err
		}
	} else {
		opts := []nats.Option{nats.Name("herald-tool"), nats.Timeout(5 * time.Second)}
		if cfg.NATSCreds != "" {
			opts = append(opts, nats.UserCredentials(cfg.NATSCreds))
		}
		if o.nc, err = nats.Connect(strings.Join(cfg.NATSURLs, ","), opts...); err != nil {
			return nil, fmt.Errorf("HERALD_NATS_URL: %w", err)
		}
	}
	o.Log, err = eventlog.Attach(ctx, o.nc, eventlog.Config{})
	if errors.Is(err, eventlog.ErrNoStreams) {
		return nil, fmt.Errorf("%w: %v", ErrNoEventLog, err)
	}
	return o, err
}

// Close releases the connection, the embedded server and the lock. It is
// safe to call more than once.
func (o *Offline) Close() {
	if o.nc != nil {
		o.nc.Close()
		o.nc = nil
	}
	if o.nats != nil {
		o.nats.Shutdown()
		o.nats = nil
	}
	o.lock.release()
}

// RebuildReport says what Rebuild did.
type RebuildReport struct {
	// Path is the projection file.
	Path string
	// LastSeq is the last event sequence the rebuilt file holds: the
	// EVENTS stream's last sequence when the rebuild started.
	LastSeq uint64
	// Checksum is the rebuilt file's projections.Checksum.
	Checksum string
	// Previous is the checksum of the file it replaced, brought to the same
	// LastSeq first; "" when there was none or it could not be read.
	Previous string
	// Took is how long the replay took.
	Took time.Duration
}

// Rebuild recreates the projection file of cfg's data dir from the event
// log, with no herald process serving on that data dir (an error wrapping
// ErrDataDirInUse otherwise). The new file is built beside the old one and
// replaces it only once complete. The old file, when usable, is first
// brought to the same sequence, so that Previous and Checksum compare like
// with like: equal checksums mean the live projections were right.
func Rebuild(ctx context.Context, cfg Config, logger *slog.Logger) (RebuildReport, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	o, err := OpenOffline(ctx, cfg, true)
	if err != nil {
		return RebuildReport{}, err
	}
	defer o.Close()
	rep := RebuildReport{Path: filepath.Join(cfg.DataDir, ProjectionsFile)}
	stream, err := o.Log.Identity(ctx)
	if err != nil {
		return rep, err
	}
	rep.LastSeq = stream.LastSeq
	opts := projections.Options{Logger: logger}
	if _, err := os.Stat(rep.Path); err == nil {
		rep.Previous = previousChecksum(ctx, rep.Path, o.Log, stream, opts)
	}
	opts.Stream = stream

	start := time.Now()
	tmp := rep.Path + ".rebuild"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return rep, err
	}
	fresh, err := projections.Open(tmp, opts)
	if err != nil {
		return rep, err
	}
	err = fresh.CatchUpTo(ctx, o.Log, rep.LastSeq)
	if err == nil {
		rep.Checksum, err = fresh.Checksum()
	}
	if cerr := fresh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return rep, fmt.Errorf("rebuild: %w", err)
	}
	if err := os.Rename(tmp, rep.Path); err != nil {
		return rep, fmt.Errorf("rebuild: %w", err)
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// previousChecksum brings the old projection file to the stream's last
// sequence and checksums it; "" when it cannot, or when the file was made
// from another stream.
func previousChecksum(ctx context.Context, path string, log *eventlog.Log, stream eventlog.Identity, opts projections.Options) string {
	seq := stream.LastSeq
	old, err := projections.Open(path, opts)
	if err != nil {
		return ""
	}
	defer old.Close()
	if old.Applied() > seq || (old.StreamID() != "" && old.StreamID() != stream.ID) {
		return ""
	}
	if err := old.CatchUpTo(ctx, log, seq); err != nil {
		return ""
	}
	sum, err := old.Checksum()
	if err != nil {
		return ""
	}
	return sum
}
