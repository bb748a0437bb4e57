package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
)

// maxRounds bounds the read-claim loop of one Deliver: each round either
// answers, waits, or lost a claim to a writer that made progress.
const maxRounds = 64

// Deliver delivers req for tenant, at most once per req.IdempotencyKey,
// and returns its Result (see Service for the ledger's rules).
//
// The channels of req.Channel's kind are tried in the order of [Select]:
// a failure that proves nothing was sent moves to the next one at once; a
// rejection ends the send (ErrProviderRejected, terminal); an unknown
// outcome ends it too (ErrProviderUnavailable, transient), and every later
// request of the key tries only that channel again. Each channel tried is
// one attempt, one ledger row.
//
// The send goes as req.Decision decided it, or, without one, as [Decide]
// decides it now; Deliver never holds a send (the engine does, before).
// A recipient with no address of the kind gets a skipped Result (Status
// StatusSkipped, Reason ReasonNoAddress), recorded as a ledger row; so
// does a recipient whose preferences opt out of the send (Reason
// ReasonPreference), and one whose address is suppressed
// (ReasonSuppressed). A rejection saying the address does not exist
// (provider.ErrBadAddress) suppresses it (reason hard_bounce) once the
// failure is recorded.
//
// Errors wrap ErrInvalidRequest or ErrInvalidContent (with a
// *apierr.ValidationError), ErrNoChannel, ErrProviderRejected,
// ErrProviderUnavailable (every channel failed) or ErrInProgress;
// [Classify] tells terminal from transient. Other errors are internal (the
// log, or a secret that does not open).
//
// Once Deliver has claimed an attempt it calls the provider and records
// the outcome even if ctx ends meanwhile (bounded by Config.SendTimeout),
// so a client that gives up does not leave the key blocked.
func (s *Service) Deliver(ctx context.Context, tenant string, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	if err := ValidateContent(req.Channel, req.Content); err != nil {
		return Result{}, err
	}
	if req.Channel == KindEmail {
		content, err := ApplyLayout(s.cfg.Store, tenant, req.Content)
		if err != nil {
			return Result{}, err
		}
		req.Content = content
	}
	subject := eventlog.Subject(tenant, eventlog.AggDelivery, req.IdempotencyKey)
	d := send{tenant: tenant, subject: subject, req: req}
	deadline := time.Now().Add(s.cfg.InFlightWait)
	var (
		p         *plan
		waitedFor string          // the attempt in flight this request waited for
		tried     map[string]bool // channels this request tried and saw fail as not sent
		failures  []string        // their public failures, for the answer
	)
	// The first round takes the key for new, the usual case (a send's
	// first try), without reading the ledger: its claim expects the
	// key's subject empty, so a key with any history fails it and the
	// rounds after read the ledger. A first round whose resolution fails
	// reads the ledger too before answering: a settled key answers its
	// result whatever its channels are now.
	assumeNew := true
	for range maxRounds {
		fresh := assumeNew
		assumeNew = false
		e := ledgerEntry{state: keyNew}
		if !fresh {
			var err error
			if e, err = s.ledger(ctx, subject); err != nil {
				return Result{}, err
			}
		}
		takeover, pin := "", ""
		switch e.state {
		case keySent, keySkipped:
			return s.settled(ctx, req, e)
		case keyFailed:
			if e.attemptID == waitedFor {
				// A concurrent repeat shares the outcome of the attempt it
				// waited for.
				return Result{}, e.failure()
			}
			pin = e.failed.Pin
		case keyInFlight:
			if time.Since(e.at) < s.cfg.Lease && !s.claimantDead(ctx, e) {
				waitedFor = e.attemptID
				if err := s.waitMoved(ctx, subject, e, deadline); err != nil {
					return Result{}, err
				}
				continue
			}
			// Its process died mid-send: the message may have gone out.
			takeover, pin = e.attemptID, e.channelKey
		}
		if p == nil {
			var err error
			if p, err = s.resolve(ctx, tenant, req); err != nil {
				if fresh {
					p = nil
					continue
				}
				return Result{}, err
			}
		}
		if p.skip != "" {
			res, err := s.skip(ctx, d, p, e.seq)
			if errors.Is(err, errLostClaim) {
				continue
			}
			return res, err
		}
		ch, ok := next(p.channels, pin, tried)
		if !ok {
			return Result{}, fmt.Errorf("%w: %s", ErrProviderUnavailable, strings.Join(failures, "; "))
		}
		res, err := s.attempt(ctx, d, p, try{ch: ch, pinned: pin != "", expect: e.seq, takeover: takeover})
		var nf *notSent
		switch {
		case errors.Is(err, errLostClaim):
			continue
		case errors.As(err, &nf):
			if tried == nil {
				tried = map[string]bool{}
			}
			tried[ch.ChannelKey] = true
			failures = append(failures, nf.public)
			continue
		}
		return res, err
	}
	return Result{}, fmt.Errorf("%w: the key kept changing; try again later", ErrInProgress)
}

// settled answers the Result of a key the ledger settled (e: sent or
// skipped), once its row is applied.
func (s *Service) settled(ctx context.Context, req Request, e ledgerEntry) (Result, error) {
	if err := s.waitApplied(ctx, req, e.seq); err != nil {
		return Result{}, err
	}
	if e.state == keySkipped {
		return Result{AttemptID: e.skipped.AttemptID, Status: StatusSkipped, Reason: e.skipped.Reason}, nil
	}
	return Result{AttemptID: e.sent.AttemptID, Status: StatusSent, ProviderMessageID: e.sent.ProviderMessageID}, nil
}

// next returns the channel to try: the pinned one while it is enabled,
// else the first of chs not tried yet.
func next(chs []projections.Channel, pin string, tried map[string]bool) (projections.Channel, bool) {
	if pin != "" {
		if i := slices.IndexFunc(chs, func(c projections.Channel) bool { return c.ChannelKey == pin }); i >= 0 {
			if tried[pin] {
				return projections.Channel{}, false
			}
			return chs[i], true
		}
		// The pinned channel is gone: the tenant removed or disabled it.
	}
	for _, c := range chs {
		if !tried[c.ChannelKey] {
			return c, true
		}
	}
	return projections.Channel{}, false
}

// claimantDead reports whether the attempt in flight e is known to be
// abandoned: claimed by this process with a claim it knows it sent nothing
// under, or by a dead process: with SoleProcess, any process but this one;
// otherwise one that kept a presence and no longer does.
func (s *Service) claimantDead(ctx context.Context, e ledgerEntry) bool {
	if e.process == s.cfg.Process {
		return s.unsent.has(e.attemptID)
	}
	if s.cfg.SoleProcess {
		return true
	}
	if !e.present || s.cfg.Alive == nil {
		return false
	}
	alive, err := s.cfg.Alive(ctx, e.process)
	return err == nil && !alive
}

// errLostClaim: another request appended to the key's subject first.
var errLostClaim = errors.New("delivery: lost the claim")

// notSent is the answer of an attempt whose channel failed in a way that
// proves nothing was sent: the next channel may be tried.
type notSent struct{ public string }

func (e *notSent) Error() string { return e.public }
