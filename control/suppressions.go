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
// nothing. Errors: *apierr.ValidationError (an unknown kind, an address
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
		case err == nil && cur.Reason == reason:
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
			return apierr.Errorf(apierr.ErrNotFound, "suppression_not_found", "no suppression of that %s address", kind)
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
