package control

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// MaxSuppressionReasonChars bounds a tenant-given suppression reason.
const MaxSuppressionReasonChars = 128

// SuppressCommand is PUT /v1/suppressions/{kind}/{address}.
type SuppressCommand struct {
	Kind    string
	Address string
	// Reason is the tenant's reason, 1–MaxSuppressionReasonChars printable
	// characters; nil is events.SuppressionManual.
	Reason *string
}

// suppressionTarget validates kind and address, adding problems to p, and
// returns the normalised address (delivery.NormalizeAddress).
func suppressionTarget(p *apierr.Problems, kind, address string) string {
	if !delivery.SuppressibleKind(kind) {
		p.Add("kind", "must be one of email, sms, chat, push")
		return ""
	}
	addr, err := delivery.NormalizeAddress(kind, address)
	if err != nil {
		p.Add("address", "%s", err.Error())
	}
	return addr
}

// Suppress suppresses an address of a channel kind for the tenant: every
// later send to it is skipped (reason suppressed). It reports whether the
// suppression is new. An address already suppressed keeps its creation
// time; a different reason replaces its reason, the same one records
// nothing. Naming the address of an erased suppression again records it
// with its address. Errors: *apierr.ValidationError (an unknown kind, an address
// that is not one of its kind, a reason out of bounds).
func (c *Control) Suppress(ctx context.Context, tenant string, cmd SuppressCommand) (projections.Suppression, bool, error) {
	var p apierr.Problems
	addr := suppressionTarget(&p, cmd.Kind, cmd.Address)
	reason := events.SuppressionManual
	if cmd.Reason != nil {
		reason = *cmd.Reason
		if !apierr.ValidID(reason, MaxSuppressionReasonChars) {
			p.Add("reason", "must be 1 to %d printable characters", MaxSuppressionReasonChars)
		}
	}
	if err := p.Err(); err != nil {
		return projections.Suppression{}, false, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSuppression, events.SuppressionID(cmd.Kind, addr))
	var (
		row     projections.Suppression
		created bool
	)
	err := retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		cur, err := c.store.Suppression(tenant, cmd.Kind, addr)
		switch {
		case err == nil && cur.Reason == reason && !cur.Erased:
			row, created = cur, false
			return nil
		case err != nil && !errors.Is(err, projections.ErrNotFound):
			return err
		}
		at, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SuppressionAdded, Tenant: tenant,
			Data:   events.SuppressionAddedData{Kind: cmd.Kind, Address: addr, Reason: reason},
			Expect: true, ExpectSeq: seq})
		if err != nil {
			return err
		}
		if row, err = c.store.Suppression(tenant, cmd.Kind, addr); err != nil {
			return err
		}
		created = row.Created == at
		return nil
	})
	return row, created, err
}

// Unsuppress removes the suppression of an address of a channel kind.
// Errors: apierr.ErrNotFound (suppression_not_found),
// *apierr.ValidationError.
func (c *Control) Unsuppress(ctx context.Context, tenant, kind, address string) error {
	var p apierr.Problems
	addr := suppressionTarget(&p, kind, address)
	if err := p.Err(); err != nil {
		return err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSuppression, events.SuppressionID(kind, addr))
	return retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		if _, err := c.store.Suppression(tenant, kind, addr); errors.Is(err, projections.ErrNotFound) {
			return apierr.Errorf(apierr.CodeSuppressionNotFound, "no suppression of that %s address", kind)
		} else if err != nil {
			return err
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SuppressionRemoved, Tenant: tenant,
			Data: events.SuppressionRemovedData{Kind: kind, Address: addr}, Expect: true, ExpectSeq: seq})
		return err
	})
}

// Suppressions lists the tenant's suppressions in (kind, address) order,
// only those of kind when it is not empty. Errors: *apierr.ValidationError
// (an unknown kind).
func (c *Control) Suppressions(tenant, kind string, pg projections.Page) ([]projections.Suppression, string, error) {
	if kind != "" && !delivery.SuppressibleKind(kind) {
		var p apierr.Problems
		p.Add("kind", "must be one of email, sms, chat, push")
		return nil, "", p.Err()
	}
	return c.store.Suppressions(tenant, kind, pg)
}

// eraseSuppressions makes the suppressions of the addresses an erased
// subscriber ever held (the SubscriberUpserted events of its history)
// forget them: each gets a SuppressionErased, then every earlier event of
// its subject, which held the address, is secure-deleted. The suppression
// stays in force. Repeating it after a crash finishes what was begun.
func (c *Control) eraseSuppressions(ctx context.Context, tenant string, history []eventlog.Event) (int, error) {
	type target struct{ kind, addr string }
	seen := map[target]bool{}
	deleted := 0
	for _, ev := range history {
		if ev.Type != events.SubscriberUpserted {
			continue
		}
		var d events.SubscriberUpsertedData
		if err := ev.Decode(&d); err != nil {
			return deleted, err
		}
		for kind, addrs := range d.Contacts {
			if !delivery.SuppressibleKind(kind) {
				continue
			}
			for _, a := range addrs {
				addr, err := delivery.NormalizeAddress(kind, a)
				if err != nil || seen[target{kind, addr}] {
					continue
				}
				seen[target{kind, addr}] = true
				n, err := c.eraseSuppression(ctx, tenant, kind, addr)
				deleted += n
				if err != nil {
					return deleted, err
				}
			}
		}
	}
	return deleted, nil
}

// eraseSuppression forgets the address of one suppression: a suppression
// in force gets a SuppressionErased, and every SuppressionAdded or
// SuppressionRemoved before the last SuppressionErased (all of them, when
// none is in force) is secure-deleted. It returns how many it deleted.
func (c *Control) eraseSuppression(ctx context.Context, tenant, kind, addr string) (int, error) {
	subject := eventlog.Subject(tenant, eventlog.AggSuppression, events.SuppressionID(kind, addr))
	err := retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		row, err := c.store.Suppression(tenant, kind, addr)
		switch {
		case errors.Is(err, projections.ErrNotFound) || err == nil && row.Erased:
			return nil
		case err != nil:
			return err
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SuppressionErased, Tenant: tenant,
			Data: events.SuppressionErasedData{Kind: kind, Digest: events.SuppressionDigest(addr),
				Reason: row.Reason, CreatedAt: row.CreatedAt},
			Expect: true, ExpectSeq: seq})
		return err
	})
	if err != nil {
		return 0, err
	}
	hist, err := c.log.History(ctx, subject, 0)
	if err != nil {
		return 0, err
	}
	cut := len(hist)
	if _, err := c.store.Suppression(tenant, kind, addr); err == nil {
		// In force: keep what follows its last erasure.
		for i, ev := range hist {
			if ev.Type == events.SuppressionErased {
				cut = i
			}
		}
	} else if !errors.Is(err, projections.ErrNotFound) {
		return 0, err
	}
	n := 0
	for _, ev := range hist[:cut] {
		if ev.Type == events.SuppressionAdded || ev.Type == events.SuppressionRemoved {
			if err := c.log.SecureDelete(ctx, ev.Seq); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
