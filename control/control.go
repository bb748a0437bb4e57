package control

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
)

// Control executes commands. It is safe for concurrent use.
type Control struct {
	log    *eventlog.Log
	store  *projections.Store
	keys   *secrets.Keyring
	logger *slog.Logger
	// newToken draws tenant ids and API keys: secrets.NewToken, or a
	// deterministic source in tests that force a collision.
	newToken func(prefix string, n int) (string, error)
	// egress checks tenant-supplied destinations; nil allows any.
	egress *egress.Policy
	// rt executes runs; set by SetRuntime.
	rt     Runtime
	rtOpts RuntimeOptions
	// inboxTTL is the life of the inbox tokens minted; see SetInboxTokenTTL.
	inboxTTL time.Duration
	// webhookCreates serialises a tenant's endpoint creations in this
	// process (striped by tenant), so the count check before each holds.
	webhookCreates [64]sync.Mutex
}

// SetEgress makes the configuration of Bridges and channels refuse
// destinations p refuses, and Bridge URLs other than https when p allows
// no private address (CONTRACT §18). Call it before serving; nil (the
// default) allows any destination.
func (c *Control) SetEgress(p *egress.Policy) { c.egress = p }

// New returns a Control writing to log and validating against store. keys
// seals secrets before they reach the log.
func New(log *eventlog.Log, store *projections.Store, keys *secrets.Keyring, logger *slog.Logger) *Control {
	if logger == nil {
		logger = slog.Default()
	}
	return &Control{log: log, store: store, keys: keys, logger: logger, newToken: secrets.NewToken}
}

// settle waits until the projections hold every event of subject and
// returns the subject's last sequence, for an append that expects it.
func (c *Control) settle(ctx context.Context, subject string) (uint64, error) {
	seq, err := c.log.SubjectLastSeq(ctx, subject)
	if err != nil {
		return 0, err
	}
	return seq, c.store.WaitFor(ctx, seq)
}

// commit appends rec and waits until the projections applied it.
func (c *Control) commit(ctx context.Context, rec eventlog.Record) (uint64, error) {
	seq, err := c.log.Append(ctx, rec)
	if err != nil {
		return 0, err
	}
	return seq, c.store.WaitFor(ctx, seq)
}

// retry runs attempt, a read-validate-append, until it does not fail with
// eventlog.ErrConflict (see eventlog.RetryConflicts); apierr.ErrBusy when
// every try lost.
func retry(ctx context.Context, attempt func() error) error {
	err := eventlog.RetryConflicts(ctx, attempt)
	if errors.Is(err, eventlog.ErrConflict) {
		return apierr.ErrBusy
	}
	return err
}
