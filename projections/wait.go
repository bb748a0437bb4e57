package projections

import (
	"context"
	"fmt"
	"time"
)

// Applied returns the last applied stream sequence.
func (s *Store) Applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// ErrWaitTimeout is WaitFor's error when the event it waits for was not
// applied within Options.MaxWait. It wraps context.DeadlineExceeded: an API
// request that meets it answers 503, a worker gives its message back.
var ErrWaitTimeout = fmt.Errorf("projections: event not applied in time (projector stalled?): %w", context.DeadlineExceeded)

// WaitFor blocks until the event at seq (and every one before it) is
// applied, ctx ends, or Options.MaxWait passes (ErrWaitTimeout).
func (s *Store) WaitFor(ctx context.Context, seq uint64) error {
	return s.waitFor(ctx, seq, "")
}

// WaitForTenant blocks until tenant's reads see every event up to seq
// that a send's decision reads (its channels, workflows, subscribers,
// preferences, suppressions, layouts: every aggregate but its runs,
// transactions, deliveries and the like), ctx ends, or Options.MaxWait
// passes (ErrWaitTimeout). It returns once the event at seq is applied,
// as WaitFor does, or sooner: once the projector's tail has received
// seq and none of what is left to apply up to it is one of those events
// of tenant. So one tenant's broadcast, which the projector applies a
// few hundred milliseconds behind at full pace, does not hold another
// tenant's sends. The broadcasting tenant, whose events are most of what
// is left, waits as WaitFor does (heavyEvents): the projector keeps its
// pace.
func (s *Store) WaitForTenant(ctx context.Context, tenant string, seq uint64) error {
	if tenant == "" {
		return s.WaitFor(ctx, seq)
	}
	return s.waitFor(ctx, seq, tenant)
}

// waitFor is WaitFor, or WaitForTenant of tenant when it is not "".
func (s *Store) waitFor(ctx context.Context, seq uint64, tenant string) error {
	var bound <-chan time.Time
	registered := false
	defer func() {
		if registered {
			s.mu.Lock()
			s.removeWaiter(seq)
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		if s.applied >= seq {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		var received <-chan struct{}
		if tenant != "" {
			var ok bool
			if ok, received = s.ahead.clear(tenant, seq); ok {
				s.mu.Unlock()
				return nil
			}
		}
		if !registered {
			s.addWaiter(seq)
			registered = true
		}
		s.mu.Unlock()
		if bound == nil {
			t := time.NewTimer(s.opts.MaxWait)
			defer t.Stop()
			bound = t.C
		}
		select {
		case <-ch:
		case <-received:
		case <-ctx.Done():
			return fmt.Errorf("projections: waiting for #%d (at #%d): %w", seq, s.Applied(), ctx.Err())
		case <-bound:
			return fmt.Errorf("waiting %v for #%d (at #%d): %w", s.opts.MaxWait, seq, s.Applied(), ErrWaitTimeout)
		}
	}
}

// addWaiter notes a WaitFor blocked until seq is applied; s.mu is held.
func (s *Store) addWaiter(seq uint64) {
	if s.waiting == nil {
		s.waiting = make(map[uint64]int)
	}
	s.waiting[seq]++
	if s.minWaiting == 0 || seq < s.minWaiting {
		s.minWaiting = seq
	}
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// removeWaiter undoes addWaiter; s.mu is held.
func (s *Store) removeWaiter(seq uint64) {
	if s.waiting[seq]--; s.waiting[seq] > 0 {
		return
	}
	delete(s.waiting, seq)
	if seq == s.minWaiting {
		s.minWaiting = 0
		for w := range s.waiting {
			if s.minWaiting == 0 || w < s.minWaiting {
				s.minWaiting = w
			}
		}
	}
}

// awaited reports whether a WaitFor waits for an event at or below seq:
// the projector then applies what it holds at once (see Options.BatchLinger).
func (s *Store) awaited(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minWaiting != 0 && s.minWaiting <= seq
}
