package delivery

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/events"
)

// keyState is where one idempotency key stands, as the last event of its
// subject says.
type keyState int

const (
	keyNew      keyState = iota // no attempt yet
	keyInFlight                 // an attempt is claimed, no outcome yet
	keySent                     // an attempt sent the message: final
	keyFailed                   // the last attempt failed; a new one may start
	keySkipped                  // the send was skipped: final
)

// ledgerEntry is the last event of a key's subject, decoded.
type ledgerEntry struct {
	state keyState
	// seq is the subject's last sequence (0 for keyNew): the sequence the
	// next append on the subject expects.
	seq       uint64
	at        time.Time // when the last event was written
	attemptID string
	// channelKey is the channel of an attempt in flight, process the
	// process that claimed it.
	channelKey string
	process    string
	present    bool // the claimant keeps a presence key
	sent       events.DeliverySentData
	failed     events.DeliveryFailedData
	skipped    events.DeliverySkippedData
}

// ledger reads the state of the key whose subject is subject, from the log
// itself (not the projections), so every process sees every claim.
func (s *Service) ledger(ctx context.Context, subject string) (ledgerEntry, error) {
	ev, ok, err := s.cfg.Log.Last(ctx, subject)
	if err != nil || !ok {
		return ledgerEntry{state: keyNew}, err
	}
	e := ledgerEntry{seq: ev.Seq, at: ev.At}
	switch ev.Type {
	case events.DeliveryAttempted:
		var d events.DeliveryAttemptedData
		err = ev.Decode(&d)
		e.state, e.attemptID, e.channelKey, e.process, e.present = keyInFlight, d.AttemptID, d.ChannelKey, d.Process, d.Present
	case events.DeliverySent:
		err = ev.Decode(&e.sent)
		e.state, e.attemptID = keySent, e.sent.AttemptID
	case events.DeliveryFailed:
		err = ev.Decode(&e.failed)
		e.state, e.attemptID = keyFailed, e.failed.AttemptID
	case events.DeliverySkipped:
		err = ev.Decode(&e.skipped)
		e.state, e.attemptID = keySkipped, e.skipped.AttemptID
	default:
		err = fmt.Errorf("delivery: unexpected event %s #%d on %s", ev.Type, ev.Seq, subject)
	}
	return e, err
}

// failure is the error a failed attempt answers with.
func (e ledgerEntry) failure() error {
	return failureError(e.failed.Code, e.failed.Message)
}

// failureError rebuilds the error of a recorded failure from its code.
func failureError(code, message string) error {
	if code == apierr.CodeProviderRejected {
		return fmt.Errorf("%w: %s", ErrProviderRejected, message)
	}
	return fmt.Errorf("%w: %s", ErrProviderUnavailable, message)
}

// waitMoved waits until the subject's last sequence moves past e.seq (the
// attempt in flight recorded its outcome, or someone took it over), or the
// attempt's lease runs out. It fails with ErrInProgress at deadline.
func (s *Service) waitMoved(ctx context.Context, subject string, e ledgerEntry, deadline time.Time) error {
	leaseEnd := e.at.Add(s.cfg.Lease)
	pause := time.Millisecond
	for {
		now := time.Now()
		if !now.Before(leaseEnd) {
			return nil
		}
		if !now.Before(deadline) {
			return fmt.Errorf("%w: attempt %s has not finished yet; try again later", ErrInProgress, e.attemptID)
		}
		t := time.NewTimer(min(pause, leaseEnd.Sub(now), deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(pause*2, 50*time.Millisecond)
		if s.claimantDead(ctx, e) {
			return nil
		}
		seq, err := s.cfg.Log.SubjectLastSeq(ctx, subject)
		if err != nil {
			return err
		}
		if seq != e.seq {
			return nil
		}
	}
}
