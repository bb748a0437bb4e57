package projections

import (
	"context"

	"github.com/heraldhq/herald/eventlog"
)

// CatchUp applies events until the store holds every event the stream had
// when CatchUp started, then returns. It is Run for one-shot tools.
func (s *Store) CatchUp(ctx context.Context, log *eventlog.Log) error {
	target, err := log.LastSeq(ctx)
	if err != nil {
		return err
	}
	return s.CatchUpTo(ctx, log, target)
}

// CatchUpTo applies events until the store has applied every event up to
// and including seq and none after it: two stores brought to the same seq
// this way hold the same content, whatever else is being appended
// meanwhile. A store already past seq is left as it is.
func (s *Store) CatchUpTo(ctx context.Context, log *eventlog.Log, seq uint64) error {
	if s.Applied() >= seq {
		return nil
	}
	tail, err := log.Tail(ctx, eventlog.TailOptions{After: s.Applied()})
	if err != nil {
		return err
	}
	defer tail.Stop()
	for s.Applied() < seq {
		evs, err := tail.Next(ctx, 4096)
		if err != nil {
			return err
		}
		n := len(evs)
		for n > 0 && evs[n-1].Seq > seq {
			n--
		}
		if err := s.ApplyBatch(evs[:n]); err != nil {
			return err
		}
		if n < len(evs) {
			break
		}
	}
	return nil
}
