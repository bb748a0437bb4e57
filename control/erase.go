package control

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// EraseSubscriber deletes a subscriber and erases its personal data: it
// appends SubscriberErased (which every projection applies by dropping the
// subscriber, blanking its delivery addresses and compacting its file),
// then secure-deletes from the log every earlier event that held the data:
// the subscriber's own events (contacts, locale, attributes), the
// TriggerAccepted of each transaction addressed to it alone (the payload),
// the subscriber its runs froze at their first turn, the attempts and
// failures of its deliveries (the address, a provider's reply) and its
// in-app messages. Its runs stay, with their status and steps; the
// unfinished ones are cancelled first (cancelRunsOf). The
// suppressions of its addresses stay in force without the address
// (eraseSuppressions).
//
// An erase cut short (a crash after the event) is finished by calling it
// again: a subscriber already deleted, with or without erasure, whose
// subject still holds events older than its last erasure, is erased
// again. Errors: apierr.ErrNotFound (subscriber_not_found), *apierr.ValidationError.
func (c *Control) EraseSubscriber(ctx context.Context, tenant, externalID string) error {
	if err := externalIDErr("externalId", externalID); err != nil {
		return err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	var erasedAt uint64
	err := c.update(ctx, subject, func(seq uint64) error {
		if _, err := c.store.Subscriber(tenant, externalID); err != nil {
			first, ok, ferr := c.log.First(ctx, subject)
			if ferr != nil {
				return ferr
			}
			if !ok || first.Type == events.SubscriberErased {
				return subscriberErr(err, externalID)
			}
		}
		var err error
		erasedAt, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberErased, Tenant: tenant,
			Data: events.SubscriberErasedData{SubscriberID: externalID}, Expect: true, ExpectSeq: seq})
		return err
	})
	if err != nil {
		return err
	}
	if err := c.cancelRunsOf(ctx, tenant, externalID); err != nil {
		return fmt.Errorf("erase subscriber: %w", err)
	}
	n, err := c.eraseHistory(ctx, tenant, externalID, subject, erasedAt)
	if err != nil {
		return fmt.Errorf("erase subscriber: %w", err)
	}
	c.logger.Info("subscriber erased", "tenant", tenant, "events_deleted", n, "erase_seq", erasedAt)
	return nil
}

// cancelRunsOf cancels the subscriber's unfinished runs, as Cancel does,
// before their history goes: a run going on would call the Bridge without
// its subscriber and with an erased payload, and could still send to the
// person who asked to be forgotten. It runs after SubscriberErased is
// applied, so that no trigger starts another run for the subscriber; a
// run that finished meanwhile stays as it ended.
func (c *Control) cancelRunsOf(ctx context.Context, tenant, externalID string) error {
	var live []string
	pg := projections.Page{Limit: 500}
	for {
		runs, next, err := c.store.Runs(tenant, projections.RunFilter{SubscriberID: externalID}, pg)
		if err != nil {
			return err
		}
		for _, run := range runs {
			if !run.Status.Finished() {
				live = append(live, run.RunID)
			}
		}
		if next == "" {
			break
		}
		pg.Cursor = next
	}
	for _, runID := range live {
		err := c.cancel(ctx, tenant, runID, events.RunCancelledData{Reason: events.CancelSubscriberErased})
		if err != nil && !errors.Is(err, apierr.ErrConflict) { // run_finished: it ended meanwhile
			return err
		}
	}
	return nil
}

// eraseHistory secure-deletes the events before seq that hold the
// subscriber's personal data, and returns how many it deleted.
func (c *Control) eraseHistory(ctx context.Context, tenant, externalID, subject string, before uint64) (int, error) {
	var seqs []uint64
	own, err := c.log.History(ctx, subject, 0)
	if err != nil {
		return 0, err
	}
	for _, ev := range own {
		if ev.Seq < before {
			seqs = append(seqs, ev.Seq)
		}
	}
	// Its in-app messages.
	inbox, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggInbox, externalID), 0)
	if err != nil {
		return 0, err
	}
	for _, ev := range inbox {
		if ev.Seq < before {
			seqs = append(seqs, ev.Seq)
		}
	}
	txns := map[string]bool{}
	pg := projections.Page{Limit: 500}
	for {
		runs, next, err := c.store.Runs(tenant, projections.RunFilter{SubscriberID: externalID}, pg)
		if err != nil {
			return 0, err
		}
		for _, run := range runs {
			if !txns[run.TransactionID] {
				txns[run.TransactionID] = true
				s, err := c.triggerOf(ctx, tenant, run.TransactionID, externalID)
				if err != nil {
					return 0, err
				}
				seqs = append(seqs, s...)
			}
			s, err := c.deliveriesOf(ctx, tenant, run.RunID)
			if err != nil {
				return 0, err
			}
			seqs = append(seqs, s...)
			if s, err = c.frozenSubscriberOf(ctx, tenant, run.RunID); err != nil {
				return 0, err
			}
			seqs = append(seqs, s...)
		}
		if next == "" {
			break
		}
		pg.Cursor = next
	}
	// Before the subscriber's own events go: they name its addresses.
	n, err := c.eraseSuppressions(ctx, tenant, own)
	if err != nil {
		return n, err
	}
	for _, seq := range seqs {
		if err := c.log.SecureDelete(ctx, seq); err != nil {
			return 0, err
		}
	}
	return n + len(seqs), nil
}

// frozenSubscriberOf returns the sequences of the run's
// RunSubscriberRecorded: the subscriber as of the run's start, and the
// run's first step when it was recorded with it (a `run` step's output,
// which may hold the subscriber's data too). A run still going on
// afterwards reads the current subscriber (none) at each turn, and runs
// a first step erased with it again.
func (c *Control) frozenSubscriberOf(ctx context.Context, tenant, runID string) ([]uint64, error) {
	evs, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, ev := range evs {
		if ev.Type == events.RunSubscriberRecorded {
			seqs = append(seqs, ev.Seq)
		}
	}
	return seqs, nil
}

// triggerOf returns the sequence of txn's TriggerAccepted when it was
// addressed to externalID alone (its payload is that subscriber's); a
// topic trigger's payload is shared and stays.
func (c *Control) triggerOf(ctx context.Context, tenant, txn, externalID string) ([]uint64, error) {
	ev, ok, err := c.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn))
	if err != nil || !ok || ev.Type != events.TriggerAccepted {
		return nil, err
	}
	var d events.TriggerAcceptedData
	if err := ev.Decode(&d); err != nil {
		return nil, err
	}
	if d.To.SubscriberID == nil || *d.To.SubscriberID != externalID {
		return nil, nil
	}
	return []uint64{ev.Seq}, nil
}

// deliveriesOf returns the sequences of the delivery attempts and failures
// of a run: they hold the address and the provider's reply. The outcome
// DeliverySent stays (ids only), so a repeated key still sends nothing.
func (c *Control) deliveriesOf(ctx context.Context, tenant, runID string) ([]uint64, error) {
	var seqs []uint64
	keys := map[string]bool{}
	pg := projections.Page{Limit: 500}
	for {
		rows, next, err := c.store.Deliveries(tenant, runID, pg)
		if err != nil {
			return nil, err
		}
		for _, row := range rows {
			if keys[row.IdempotencyKey] {
				continue
			}
			keys[row.IdempotencyKey] = true
			hist, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggDelivery, row.IdempotencyKey), 0)
			if err != nil {
				return nil, err
			}
			for _, ev := range hist {
				if ev.Type == events.DeliveryAttempted || ev.Type == events.DeliveryFailed {
					seqs = append(seqs, ev.Seq)
				}
			}
		}
		if next == "" {
			return seqs, nil
		}
		pg.Cursor = next
	}
}
