package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// recordTimeout bounds the append of an attempt's outcome (retries
// included).
const recordTimeout = 10 * time.Second

// skip records the skipped send (its subject's last sequence being expect).
// It fails with errLostClaim when another request appended first.
func (s *Service) skip(ctx context.Context, d send, p *plan, expect uint64) (Result, error) {
	tenant, subject, req := d.tenant, d.subject, d.req
	id := eventlog.NewID("att_")
	seq, err := s.record(ctx, eventlog.Record{
		Subject: subject, Type: events.DeliverySkipped, Tenant: tenant, MsgID: id,
		Data: events.DeliverySkippedData{DeliveryAttempt: events.DeliveryAttempt{AttemptID: id,
			IdempotencyKey: req.IdempotencyKey, RunID: req.RunID, StepID: req.StepID, SubscriberID: p.recipient,
			ChannelKey: p.channels[0].ChannelKey, Kind: req.Channel}, Reason: p.skip},
		Expect: true, ExpectSeq: expect,
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return Result{}, errLostClaim
	}
	if err != nil {
		return Result{}, err
	}
	if err := s.waitApplied(ctx, req, seq); err != nil {
		return Result{}, err
	}
	s.cfg.Logger.Debug("delivery: skipped", "tenant", tenant, "idempotencyKey", req.IdempotencyKey, "reason", p.skip)
	return Result{AttemptID: id, Status: StatusSkipped, Reason: p.skip}, nil
}

// waitApplied waits until the ledger row at seq is applied, so that GET
// /v1/deliveries shows the answer; not for a caller that named what it
// has seen (Request.Seen).
func (s *Service) waitApplied(ctx context.Context, req Request, seq uint64) error {
	if req.Seen != 0 {
		return nil
	}
	return s.cfg.Store.WaitFor(ctx, seq)
}

// record appends an attempt's outcome, retrying failures other than a
// conflict for up to recordTimeout, whatever becomes of ctx.
func (s *Service) record(ctx context.Context, rec eventlog.Record) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	pause := 50 * time.Millisecond
	for {
		seq, err := s.cfg.Log.Append(ctx, rec)
		if err == nil || errors.Is(err, eventlog.ErrConflict) {
			return seq, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
