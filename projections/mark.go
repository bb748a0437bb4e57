package projections

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/eventlog"
)

// markCache shares one stream-info call among the reads that arrive while
// another call is in flight: a call starts only after every earlier call
// finished, so the mark it returns is taken after each joiner arrived.
type markCache struct {
	mu      sync.Mutex
	pending *markCall
	running bool
}

type markCall struct {
	done chan struct{}
	seq  uint64
	err  error
}

// WaitCaughtUp waits until the store has applied every event the stream
// held when the call arrived, whichever process appended it.
func (s *Store) WaitCaughtUp(ctx context.Context, log *eventlog.Log) error {
	m := &s.lastMark
	m.mu.Lock()
	c := m.pending
	if c == nil {
		c = &markCall{done: make(chan struct{})}
		m.pending = c
		if !m.running {
			m.running = true
			go m.run(log)
		}
	}
	m.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.err != nil {
		return c.err
	}
	return s.WaitFor(ctx, c.seq)
}

func (m *markCache) run(log *eventlog.Log) {
	for {
		m.mu.Lock()
		c := m.pending
		m.pending = nil
		if c == nil {
			m.running = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.seq, c.err = log.LastSeq(ctx)
		cancel()
		close(c.done)
	}
}
