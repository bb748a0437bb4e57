package delivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// provider returns the provider of the tenant's channel ch, built from its
// opened config (cached per config version).
func (s *Service) provider(tenant string, ch projections.Channel) (provider.Provider, error) {
	version := fmt.Sprintf("%d.%d", ch.Seq, ch.UpdatedAt.UnixNano())
	return s.cache.get(tenant+"\x00"+ch.ChannelKey, version, func() (provider.Provider, error) {
		config, err := OpenChannelConfig(s.cfg.Keys, tenant, ch)
		if err != nil {
			return nil, err
		}
		build, ok := s.news[ch.ChannelKey]
		if !ok {
			return noProvider{ch.ChannelKey}, nil
		}
		p, err := build(config, s.deps)
		if err != nil {
			return nil, errNoProvider(ch.ChannelKey, err)
		}
		return p, nil
	})
}

// send is one Deliver: the tenant, the request, and its key's subject in
// the ledger.
type send struct {
	tenant, subject string
	req             Request
}

// try is one channel's attempt of a send: the channel, whether the key is
// pinned to it, the key subject's last sequence its claim expects, and
// the attempt in flight it takes over ("" for none).
type try struct {
	ch       projections.Channel
	pinned   bool
	expect   uint64
	takeover string
}

// attempt claims d's key for t.ch and sends. It fails with errLostClaim
// when another request claimed first, and with a *notSent when the channel
// failed in a way that proves nothing was sent.
func (s *Service) attempt(ctx context.Context, d send, p *plan, t try) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	prov, provErr := s.provider(d.tenant, t.ch)
	if provErr != nil && !errors.Is(provErr, provider.ErrNotSent) {
		return Result{}, provErr // a secret that does not open: internal
	}
	attemptID, claimSeq, err := s.claim(ctx, d, p, t)
	if err != nil {
		return Result{}, err
	}
	log := s.cfg.Logger.With("tenant", d.tenant, "idempotencyKey", d.req.IdempotencyKey, "attemptId", attemptID,
		"channelKey", t.ch.ChannelKey)
	if t.takeover != "" {
		log.Warn("delivery: took over an attempt that recorded no outcome before its process stopped or its lease ran out", "staleAttemptId", t.takeover)
	}

	// The key is ours: send and record the outcome whatever becomes of ctx.
	var (
		providerID string
		sendErr    = provErr
	)
	if sendErr == nil {
		sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SendTimeout)
		providerID, sendErr = prov.Send(sendCtx, provider.Message{
			Tenant: d.tenant, WorkflowID: d.req.WorkflowID, RunID: d.req.RunID, StepID: d.req.StepID,
			SubscriberID: p.recipient, IdempotencyKey: d.req.IdempotencyKey, To: p.address, Content: d.req.Content,
			ListUnsubscribe: p.unsubscribe,
		})
		cancel()
	}

	outcome := eventlog.Record{Subject: d.subject, Tenant: d.tenant, MsgID: attemptID + ".outcome",
		Expect: true, ExpectSeq: claimSeq}
	var answer error
	if sendErr == nil {
		outcome.Type = events.DeliverySent
		outcome.Data = events.DeliverySentData{AttemptID: attemptID, ProviderMessageID: providerID}
		log.Debug("delivery: sent", "providerMessageId", providerID)
	} else {
		var data events.DeliveryFailedData
		data, answer = judge(t, sendErr)
		data.AttemptID = attemptID
		outcome.Type = events.DeliveryFailed
		outcome.Data = data
		log.Warn("delivery: attempt failed", "code", data.Code, "pin", data.Pin, "err", egress.LogText(sendErr))
	}
	seq, err := s.record(ctx, outcome)
	if err != nil {
		log.Error("delivery: the outcome of an attempt could not be recorded; the key stays claimed until its lease ends",
			"outcome", outcome.Type, "err", err)
		return Result{}, fmt.Errorf("delivery: recording the outcome of attempt %s: %w", attemptID, err)
	}
	if errors.Is(sendErr, provider.ErrBadAddress) {
		s.suppressBounce(ctx, d.tenant, t.ch.Kind, p.address, attemptID, log)
	}
	if err := s.waitApplied(ctx, d.req, seq); err != nil {
		return Result{}, err
	}
	if answer != nil {
		return Result{}, answer
	}
	return Result{AttemptID: attemptID, Status: StatusSent, ProviderMessageID: providerID}, nil
}

// claim appends the DeliveryAttempted of t, expecting the key's subject at
// t.expect, and returns the attempt's id and the claim's sequence. It
// fails with errLostClaim when another request appended first.
func (s *Service) claim(ctx context.Context, d send, p *plan, t try) (attemptID string, seq uint64, err error) {
	attemptID = eventlog.NewID("att_")
	// The claim is written whatever becomes of ctx: a claim abandoned half
	// way (published, its acknowledgement not awaited, as when the process
	// shuts down) could hold the key for a whole lease.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	seq, err = s.cfg.Log.Append(claimCtx, eventlog.Record{
		Subject: d.subject, Type: events.DeliveryAttempted, Tenant: d.tenant, MsgID: attemptID,
		Data: events.DeliveryAttemptedData{
			DeliveryAttempt: events.DeliveryAttempt{AttemptID: attemptID, IdempotencyKey: d.req.IdempotencyKey,
				RunID: d.req.RunID, StepID: d.req.StepID, SubscriberID: p.recipient, ChannelKey: t.ch.ChannelKey,
				Kind: t.ch.Kind},
			Address: p.address, Takeover: t.takeover, Process: s.cfg.Process, Present: s.cfg.Alive != nil,
		},
		Expect: true, ExpectSeq: t.expect,
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return "", 0, errLostClaim
	}
	if err != nil {
		s.unsent.add(attemptID, s.cfg.Lease)
	}
	return attemptID, seq, err
}

// judge returns the ledger row (without its attempt id) of t's failed
// send, and what Deliver answers: a *notSent when the next channel may be
// tried, else the failure's error. It is pure.
func judge(t try, sendErr error) (events.DeliveryFailedData, error) {
	// The tenant sees the provider's public words (a reply or status
	// code), never its text: the host may be a service that is no mail
	// server or provider. The log has them.
	public := t.ch.ChannelKey + ": " + provider.PublicMessage(sendErr)
	data := events.DeliveryFailedData{Code: apierr.CodeProviderUnavailable, Message: public, Transient: true}
	switch {
	case errors.Is(sendErr, egress.ErrRefused), errors.Is(sendErr, provider.ErrRejected):
		// A destination the egress policy refuses is refused on every
		// try: terminal, as a rejection (docs/security.md).
		data.Code, data.Transient = apierr.CodeProviderRejected, false
		return data, failureError(data.Code, public)
	case errors.Is(sendErr, provider.ErrNotSent) && !t.pinned:
		return data, &notSent{public: public}
	default:
		// Not sent on the channel the key is pinned to, or an unknown
		// outcome: only this channel may try again.
		data.Pin = t.ch.ChannelKey
		return data, failureError(data.Code, public)
	}
}
