package delivery

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// ErrNoInbound: the channel's provider reports nothing Herald hears (its
// catalog key has no verifier).
var ErrNoInbound = errors.New("delivery: this channel's provider reports no events to herald")

// Heard is what became of a request to an inbound URL.
type Heard struct {
	// Recorded counts the reports recorded now; Ignored those that name
	// no message of the channel's or were recorded before.
	Recorded, Ignored int
}

// Hear verifies a provider's request to the inbound URL of channel ch of
// tenant and records each report it holds that names a message sent on
// that channel: a DeliveryReported on the subject of the provider's event
// id, appended only while that subject is empty, so the provider's
// retries record nothing more. A hard bounce or a complaint recorded now
// suppresses the row's address. An SNS subscription confirmation is
// answered.
//
// A request whose signature covers only a one-use token (Mailgun's)
// spends it: another request with that token and another body is
// refused as inbound.ErrReplayed.
//
// Errors: ErrNoInbound, inbound.ErrSignature (nothing is recorded; an
// inbound.ErrReplayed is one), inbound.ErrMalformed, or the log's.
func (s *Service) Hear(ctx context.Context, tenant string, ch projections.Channel, req inbound.Request) (Heard, error) {
	verify, ok := inbound.For(ch.ChannelKey)
	if !ok {
		return Heard{}, ErrNoInbound
	}
	config, err := OpenChannelConfig(s.cfg.Keys, tenant, ch)
	if err != nil {
		return Heard{}, err
	}
	req.Config = config
	res, err := verify(ctx, req, s.cfg.Inbound)
	if err != nil {
		return Heard{}, err
	}
	log := s.cfg.Logger.With("tenant", tenant, "channelKey", ch.ChannelKey)
	if res.Once != "" {
		if err := s.useOnce(ctx, tenant, ch.ChannelKey, res.Once, req.Body); err != nil {
			if errors.Is(err, inbound.ErrReplayed) {
				log.Warn("delivery: a provider's request reused the token of another; refused")
			}
			return Heard{}, err
		}
	}
	if res.Confirm != "" {
		if s.cfg.ConfirmSNS == nil {
			log.Warn("delivery: an SNS subscription asks to be confirmed; confirm it in the AWS console")
		} else if err := s.cfg.ConfirmSNS(ctx, res.Confirm); err != nil {
			log.Warn("delivery: the SNS subscription could not be confirmed", "err", err)
			return Heard{}, err
		} else {
			log.Info("delivery: SNS subscription confirmed")
		}
	}
	var h Heard
	var last uint64
	for _, rep := range res.Reports {
		row, err := s.reportedRow(tenant, ch.ChannelKey, rep.MessageID)
		if errors.Is(err, projections.ErrNotFound) {
			h.Ignored++
			continue
		}
		if err != nil {
			return h, err
		}
		subject := eventlog.Subject(tenant, eventlog.AggDelivery, events.ReportSubjectID(ch.ChannelKey, rep.EventID))
		seq, err := s.cfg.Log.Append(ctx, eventlog.Record{
			Subject: subject,
			Type:    events.DeliveryReported, Tenant: tenant, Expect: true,
			Data: events.DeliveryReportedData{AttemptID: row.AttemptID, ChannelKey: ch.ChannelKey, Status: rep.Status,
				Bounce: rep.Bounce, ProviderEventID: rep.EventID, Detail: rep.Detail}})
		if errors.Is(err, eventlog.ErrConflict) {
			// Recorded before: a provider's retry, perhaps of a request
			// whose process stopped between the report and its
			// suppression.
			h.Ignored++
			if err := s.suppressUnfollowed(ctx, tenant, row, rep, subject, log); err != nil {
				return h, err
			}
			continue
		}
		if err != nil {
			return h, err
		}
		h.Recorded++
		last = seq
		if s.cfg.Reported != nil {
			s.cfg.Reported(ch.ChannelKey, rep.Status)
		}
		// Unsuppressed, the request fails and the provider's retry
		// suppresses (suppressUnfollowed).
		if err := s.suppressReported(ctx, tenant, row, rep, log); err != nil {
			return h, err
		}
	}
	if last != 0 {
		// A read right after the answer shows the reports.
		if err := s.cfg.Store.WaitFor(ctx, last); err != nil {
			log.Debug("delivery: reports recorded, projections not caught up yet", "err", err)
		}
	}
	return h, nil
}

// onceTTL is how long a provider's one-use token is kept: a token
// signed at T is accepted from T-MaxSkew to T+MaxSkew, so its first use
// is at most 2×MaxSkew before its last; a minute more for the clocks.
const onceTTL = 2*inbound.MaxSkew + time.Minute

// useOnce records the use of a provider's one-use token on channelKey of
// tenant by a request of body: a request of another body with the same
// token is refused (inbound.ErrReplayed); the same body again (the
// provider's retry) is not, and its reports are recorded once as any.
func (s *Service) useOnce(ctx context.Context, tenant, channelKey, token string, body []byte) error {
	s.onceMu.Lock()
	if s.once == nil {
		once, err := s.cfg.Log.Once(ctx, onceTTL)
		if err != nil {
			s.onceMu.Unlock()
			return err
		}
		s.once = once
	}
	once := s.once
	s.onceMu.Unlock()
	sum := sha256.Sum256(body)
	err := once.Use(ctx, tenant+"\x00"+channelKey+"\x00"+token, sum[:])
	if errors.Is(err, eventlog.ErrUsed) {
		return inbound.ErrReplayed
	}
	return err
}

// reportedRow finds the row of the message a channel's provider knows
// as id: as recorded, or with the angle brackets of a Message-ID header
// one side wrote and the other did not.
func (s *Service) reportedRow(tenant, channelKey, id string) (projections.Delivery, error) {
	bare := strings.TrimSuffix(strings.TrimPrefix(id, "<"), ">")
	var err error
	for _, c := range []string{id, bare, "<" + bare + ">"} {
		var row projections.Delivery
		if row, err = s.cfg.Store.DeliveryByProviderID(tenant, channelKey, c); !errors.Is(err, projections.ErrNotFound) {
			return row, err
		}
	}
	return projections.Delivery{}, err
}

// suppressReported suppresses the address of row after a hard bounce or
// a complaint (CONTRACT §14): no later send mails it.
func (s *Service) suppressReported(ctx context.Context, tenant string, row projections.Delivery, rep inbound.Report, log *slog.Logger) error {
	reason := reportSuppression(rep)
	if reason == "" || row.Address == "" || !SuppressibleKind(row.Kind) {
		return nil
	}
	return s.suppressFor(ctx, tenant, row.Kind, row.Address, row.AttemptID, reason,
		row.AttemptID+".report."+reason, log)
}

// suppressUnfollowed finishes what a report recorded before left undone:
// when nothing was recorded of the address's suppression since the
// report (on subject), the process that recorded it stopped before
// suppressing. A suppression recorded after the report, the tenant's
// removal of it included, stands.
func (s *Service) suppressUnfollowed(ctx context.Context, tenant string, row projections.Delivery, rep inbound.Report, subject string, log *slog.Logger) error {
	if reportSuppression(rep) == "" || row.Address == "" || !SuppressibleKind(row.Kind) {
		return nil
	}
	addr, err := NormalizeAddress(row.Kind, row.Address)
	if err != nil {
		return nil
	}
	reported, err := s.cfg.Log.SubjectLastSeq(ctx, subject)
	if err != nil {
		return err
	}
	since, err := s.cfg.Log.SubjectLastSeq(ctx, eventlog.Subject(tenant, eventlog.AggSuppression, events.SuppressionID(row.Kind, addr)))
	if err != nil || since > reported {
		return err
	}
	return s.suppressReported(ctx, tenant, row, rep, log)
}

// reportSuppression is the suppression reason a report calls for: a
// hard bounce's or a complaint's, "" for any other.
func reportSuppression(rep inbound.Report) string {
	switch {
	case rep.Status == events.ReportBounced && rep.Bounce == events.BounceHard:
		return events.SuppressionHardBounce
	case rep.Status == events.ReportComplained:
		return events.SuppressionComplaint
	}
	return ""
}
