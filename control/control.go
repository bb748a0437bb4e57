package control

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridgeclient"
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
	// rt executes runs (see Config.Runtime).
	rt Runtime
	// background runs work past a command's answer (Config.Background).
	background func(func(context.Context))
	rtOpts     RuntimeOptions
	// inboxTTL is the life of the inbox tokens minted (see
	// Config.InboxTokenTTL).
	inboxTTL time.Duration
	// bridges opens the Bridge signing secret.
	bridges *BridgeSecrets
	// webhookCreates serialises a tenant's endpoint creations in this
	// process (striped by tenant), so the count check before each holds.
	webhookCreates [64]sync.Mutex
	// checks calls candidate Bridges (see Check), made once.
	checkOnce sync.Once
	checks    *bridgeclient.Client
}

// Config is what a Control is built with. Log, Store and Keys are
// required; the zero value of every other field is documented.
type Config struct {
	// Log is where commands append their events.
	Log *eventlog.Log
	// Store is the projections commands validate against.
	Store *projections.Store
	// Keys seals secrets before they reach the log.
	Keys *secrets.Keyring
	// Logger is the operator log. Zero: slog.Default().
	Logger *slog.Logger
	// Egress makes the configuration of Bridges and channels refuse the
	// destinations it refuses, and Bridge URLs other than https when it
	// allows no private address. Zero: any destination.
	Egress *egress.Policy
	// InboxTokenTTL is how long the inbox tokens minted are accepted.
	// Zero or less: DefaultInboxTokenTTL.
	InboxTokenTTL time.Duration
	// Runtime executes the runs of Trigger, Signal, Cancel and Sync. Zero:
	// those commands must not be called (a Control that only configures).
	Runtime Runtime
	// RuntimeOptions tune the commands of runs and workflows.
	RuntimeOptions RuntimeOptions
	// Background runs work a command leaves going after its answer (the
	// sweep of a cancelled broadcast), with a context that ends when the
	// service stops. Zero: a goroutine on context.Background().
	Background func(func(context.Context))
}

// New returns a Control writing to cfg.Log and validating against
// cfg.Store.
func New(cfg Config) *Control {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RuntimeOptions.BroadcastThreshold <= 0 {
		cfg.RuntimeOptions.BroadcastThreshold = BroadcastThreshold
	}
	if cfg.RuntimeOptions.Now == nil {
		cfg.RuntimeOptions.Now = time.Now
	}
	if cfg.Background == nil {
		cfg.Background = func(fn func(context.Context)) { go fn(context.Background()) }
	}
	return &Control{log: cfg.Log, store: cfg.Store, keys: cfg.Keys, logger: cfg.Logger, newToken: secrets.NewToken,
		egress: cfg.Egress, rt: cfg.Runtime, rtOpts: cfg.RuntimeOptions, inboxTTL: cfg.InboxTokenTTL,
		bridges: NewBridgeSecrets(cfg.Log, cfg.Store, cfg.Keys), background: cfg.Background}
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

// update runs decide, a read-validate-append that expects subject's last
// sequence seq, once the projections hold every event of subject; again
// with the new sequence while it loses the race to another writer (see
// retry).
func (c *Control) update(ctx context.Context, subject string, decide func(seq uint64) error) error {
	return retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		return decide(seq)
	})
}

// appendIfFound appends one event of typ with data to subject, once
// found, a read of the projections that hold every event of subject,
// says that what the event is about exists: the append expects subject
// as found read it, so it never follows that thing's deletion. found's
// error (its own not-found code) is returned as it is.
func (c *Control) appendIfFound(ctx context.Context, tenant, subject, typ string, data any, found func() error) error {
	return c.update(ctx, subject, func(seq uint64) error {
		if err := found(); err != nil {
			return err
		}
		_, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: typ, Tenant: tenant, Data: data,
			Expect: true, ExpectSeq: seq})
		return err
	})
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
