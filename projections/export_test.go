package projections

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/heraldhq/herald/eventlog"
)

// Rebuild discards the projection file at path and replays the whole log
// into a new one, returning once it holds every event the stream had when
// Rebuild started. The caller must not have the file open.
func Rebuild(ctx context.Context, path string, log *eventlog.Log, opts Options) (*Store, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("projections: rebuild: %w", err)
	}
	s, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	if err := s.CatchUp(ctx, log); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Inbox returns a subscriber's in-app messages, oldest first.
func (s *Store) Inbox(tenant, subscriberID string) ([]InAppMessage, error) {
	return s.InboxMessagesBetween(tenant, subscriberID, 0, math.MaxUint64)
}

// ChecksumWithoutStats is Checksum without the stats bucket: the counters
// of runs that retention removed stay live, and a rebuild has no events to
// count them from.
func (s *Store) ChecksumWithoutStats() (string, error) {
	return s.checksum(map[string]bool{string(bucketStats): true})
}

// HoldApply keeps the projector from applying anything (its tail goes on
// receiving) until release is called.
func (s *Store) HoldApply() (release func()) {
	s.applyMu.Lock()
	return s.applyMu.Unlock
}

// KeepCancels sets how many cancelled transactions TransactionCancelled
// keeps in memory, until the test ends.
func KeepCancels(t interface{ Cleanup(func()) }, n int) {
	was := maxCancelsKept
	maxCancelsKept = n
	t.Cleanup(func() { maxCancelsKept = was })
}
