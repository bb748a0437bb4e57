package eventlog

import (
	"context"
	"time"
)

// Batches reads a Tail for a reader whose cost is per batch rather than
// per event, such as a projector committing one transaction per batch.
// Create it with Tail.Batches; like the Tail, it is used by one goroutine.
type Batches struct {
	t      *Tail
	linger time.Duration
	due    func(seq uint64) bool
	nudge  <-chan struct{}
	last   time.Time // when the previous batch was returned
}

// Batches returns a batch reader of t. While events keep coming (the next
// one arrives within linger of the previous batch), a batch takes more
// events along for as long as they keep arriving less than linger/4 apart,
// up to linger after its first: a busy log is read in batches of many
// events instead of one transaction per event or two, and a short burst
// (one request's few events) is not held up once it has passed. A reader
// that waited longer gets its events at once, as with Next, so an idle log
// adds no delay. linger <= 0 makes it Next.
//
// due, when not nil, is asked after each event taken, and whenever nudge
// receives, whether someone waits for the event at seq: if so the batch
// ends there, so that gathering never delays a reader waiting to see its
// own write. It must be cheap and safe for concurrent use. nudge (may be
// nil) signals that a reader started waiting.
func (t *Tail) Batches(linger time.Duration, due func(seq uint64) bool, nudge <-chan struct{}) *Batches {
	return &Batches{t: t, linger: linger, due: due, nudge: nudge}
}

// Next blocks until at least one event is available (or ctx ends) and
// returns up to max events, oldest first.
func (b *Batches) Next(ctx context.Context, max int) ([]Event, error) {
	out, err := b.t.Next(ctx, max)
	first := time.Now()
	busy := first.Sub(b.last) < b.linger
	defer func() { b.last = time.Now() }()
	if err != nil || !busy || len(out) >= max || b.isDue(out[len(out)-1].Seq) {
		return out, err
	}
	deadline := first.Add(b.linger)
	gap := b.linger / 4
	timer := time.NewTimer(min(gap, b.linger))
	defer timer.Stop()
	for len(out) < max {
		select {
		case m := <-b.t.ch:
			ev, err := m.decode()
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
			left := time.Until(deadline)
			if left <= 0 || b.isDue(ev.Seq) {
				return out, nil
			}
			timer.Reset(min(gap, left))
		case <-b.nudge:
			if b.isDue(out[len(out)-1].Seq) {
				return out, nil
			}
		case <-timer.C:
			return out, nil
		case <-ctx.Done():
			return out, nil // what was read: the caller applies it or stops
		}
	}
	return out, nil
}

func (b *Batches) isDue(seq uint64) bool { return b.due != nil && b.due(seq) }
