package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/events"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// SecureDelete removes the event at seq from the EVENTS stream and has the
// server overwrite its bytes in the store (JetStream's secure delete), so
// neither a read nor the store's files give it back. A sequence already
// gone is no error.
func (l *Log) SecureDelete(ctx context.Context, seq uint64) error {
	err := l.retrying(ctx, func(ctx context.Context) error {
		return l.events.SecureDeleteMsg(ctx, seq)
	})
	if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		if err != nil {
			// Deleted meanwhile (or never there): make sure it is gone.
			if _, gerr := l.getMsg(ctx, seq); !errors.Is(gerr, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("eventlog: secure delete #%d: %w", seq, err)
			}
		}
		return nil
	}
	return fmt.Errorf("eventlog: secure delete #%d: %w", seq, err)
}

// LogTenant is the tenant token of the log's own events (LogSubject):
// minted tenant ids start "ten_", so no tenant has it.
const LogTenant = "sys"

// LogSubject is the subject of the log's own events (events.LogPurged).
var LogSubject = Subject(LogTenant, "log", "purge")

// Purge removes every event of subjects, and the events at seqs, from the
// EVENTS stream (retention: a run's or a send's whole history, an in-app
// message among its subscriber's). It first appends LogPurged, so that
// the stream's last event is never one it removes: a reader waiting for
// the last event (a process getting ready, a read-your-writes mark) would
// otherwise wait for a sequence that no longer arrives. The earlier
// LogPurged events go with it. A subject without events is no error.
func (l *Log) Purge(ctx context.Context, subjects []string, seqs []uint64) error {
	if len(subjects)+len(seqs) == 0 {
		return nil
	}
	for _, s := range subjects {
		if err := CheckSubject(s, false); err != nil {
			return err
		}
	}
	if _, err := l.Append(ctx, Record{Subject: LogSubject, Type: events.LogPurged, Tenant: LogTenant,
		Data: events.LogPurgedData{Subjects: len(subjects), Events: len(seqs)}}); err != nil {
		return err
	}
	// One request a subject or sequence, purgeConcurrency at once: one
	// after the other, the round trips alone kept a retention sweep
	// slower than 100 runs finishing a second (three subjects a run).
	work := make([]func(context.Context) error, 0, len(subjects)+len(seqs))
	for _, s := range subjects {
		work = append(work, func(ctx context.Context) error { return l.purge(ctx, s, 0) })
	}
	for _, seq := range seqs {
		work = append(work, func(ctx context.Context) error { return l.delete(ctx, seq) })
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(purgeConcurrency)
	for _, w := range work {
		g.Go(func() error { return w(gctx) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return l.purge(ctx, LogSubject, 1)
}

// purgeConcurrency is how many purge and delete requests Purge has under
// way at once.
const purgeConcurrency = 8

// purge removes a subject's events but its keep latest.
func (l *Log) purge(ctx context.Context, subject string, keep uint64) error {
	opts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSubject(subject)}
	if keep > 0 {
		opts = append(opts, jetstream.WithPurgeKeep(keep))
	}
	if err := l.retrying(ctx, func(ctx context.Context) error { return l.events.Purge(ctx, opts...) }); err != nil {
		return fmt.Errorf("eventlog: purge %s: %w", subject, err)
	}
	return nil
}

// delete removes the event at seq from the EVENTS stream. A sequence
// already gone is no error.
func (l *Log) delete(ctx context.Context, seq uint64) error {
	err := l.retrying(ctx, func(ctx context.Context) error {
		return l.events.DeleteMsg(ctx, seq)
	})
	if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		return nil
	}
	return fmt.Errorf("eventlog: delete #%d: %w", seq, err)
}
