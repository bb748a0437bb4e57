package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/eventlog"
)

// Run follows the log from the checkpoint and applies events until ctx
// ends. ready is closed once the store has caught up with the stream's last
// sequence as of the start (nil is allowed).
func (s *Store) Run(ctx context.Context, log *eventlog.Log, ready chan<- struct{}) error {
	target, err := log.LastSeq(ctx)
	if err != nil {
		return err
	}
	s.ahead.reset(s.Applied())
	defer s.ahead.stop()
	tail, err := log.Tail(ctx, eventlog.TailOptions{After: s.Applied(), Logger: s.log, Restarted: s.opts.TailRestarted,
		Received: s.ahead.receive})
	if err != nil {
		return err
	}
	defer tail.Stop()
	go s.watchStall(ctx, log)
	signalled := false
	signal := func() {
		if !signalled && ready != nil && s.Applied() >= target {
			close(ready)
			signalled = true
		}
	}
	signal()
	batches := tail.Batches(s.linger, s.awaited, s.nudge)
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.corrupt:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		evs, err := batches.Next(ctx, 2048)
		if s.isCorrupt() {
			return fmt.Errorf("projections: %s: %w", s.path, ErrCorrupt)
		}
		if err != nil {
			if outer.Err() != nil {
				return nil
			}
			return err
		}
		if err := s.ApplyBatch(evs); err != nil {
			return err
		}
		signal()
	}
}

// Stalled reports whether the projector has applied nothing for
// Options.StallAfter while the stream holds events it has not applied.
func (s *Store) Stalled() bool { return s.stalled.Load() }

// watchStall sets and clears stalled while Run runs, with a log line at
// each change: a stalled projector is never silent.
func (s *Store) watchStall(ctx context.Context, log *eventlog.Log) {
	tick := time.NewTicker(max(s.opts.StallAfter/10, 10*time.Millisecond))
	defer tick.Stop()
	defer s.stalled.Store(false)
	applied, since := s.Applied(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if a := s.Applied(); a != applied {
			applied, since = a, time.Now()
			if s.stalled.CompareAndSwap(true, false) {
				s.log.Info("projector applying again", "applied", a)
			}
			continue
		}
		if s.stalled.Load() || time.Since(since) < s.opts.StallAfter {
			continue
		}
		try, cancel := context.WithTimeout(ctx, s.opts.StallAfter/2)
		last, err := log.LastSeq(try)
		cancel()
		if err != nil || last <= applied {
			since = time.Now() // nothing to apply, or no answer: look again later
			continue
		}
		s.stalled.Store(true)
		s.log.Error("projector stalled: the stream holds events it does not apply", "applied", applied,
			"last", last, "for", time.Since(since).Round(time.Second))
	}
}
