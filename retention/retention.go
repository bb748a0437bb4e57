// Package retention removes what Herald keeps of finished runs once they
// are older than the retention (HERALD_RUN_RETENTION): a run finished
// longer ago leaves the log (its events, its sends' events, the in-app
// messages of it that were read) and then the projections (its row, its
// deliveries rows, its ingress row); a transaction whose last run went
// follows it. It works in the background, a batch at a time, beside the
// projector and the engine: nothing waits for it.
//
// Every process sweeps its own projections on its own clock and purges
// what they name from the shared log. The log goes first: a crash between
// the two leaves rows that the next sweep finds again (a purge of what is
// gone is no error), and a rebuild from the log never brings an expired
// run back. Nothing records an expiry as an event: the log is the record
// of what remains.
package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
)

// Config configures a Sweeper.
type Config struct {
	// Retention is how long a finished run is kept; it must be positive
	// (a service with no retention runs no sweeper).
	Retention time.Duration
	// Every is the pause between two sweeps. Zero: a quarter of
	// Retention, at most a minute, at least 100 ms.
	Every time.Duration
	// Batch is how many runs one step of a sweep removes. Zero: 500.
	Batch int
	// Now is the clock. Zero: time.Now.
	Now func() time.Time
	// Logger receives a line a sweep that removed something. Zero:
	// slog.Default().
	Logger *slog.Logger
}

// Sweeper removes expired runs; see the package comment.
type Sweeper struct {
	cfg   Config
	log   *eventlog.Log
	store *projections.Store
}

// New returns a sweeper of store's runs and log's events.
func New(cfg Config, log *eventlog.Log, store *projections.Store) *Sweeper {
	if cfg.Every <= 0 {
		cfg.Every = min(max(cfg.Retention/4, 100*time.Millisecond), time.Minute)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Sweeper{cfg: cfg, log: log, store: store}
}

// Run sweeps every Config.Every until ctx ends. A sweep that fails (the
// log unreachable) is logged and tried again at the next one.
func (s *Sweeper) Run(ctx context.Context) {
	t := time.NewTimer(s.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		runs, txns, err := s.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.cfg.Logger.Warn("retention sweep failed; trying again later", "err", err, "runs", runs, "transactions", txns)
		case runs+txns > 0:
			s.cfg.Logger.Info("retention sweep", "runs", runs, "transactions", txns, "retention", s.cfg.Retention.String())
		}
		t.Reset(s.cfg.Every)
	}
}

// Sweep removes every run that finished longer than the retention ago,
// then the transactions left without runs, and returns how many of each
// it removed.
func (s *Sweeper) Sweep(ctx context.Context) (runs, txns int, err error) {
	cutoff := s.cfg.Now().Add(-s.cfg.Retention)
	for ctx.Err() == nil {
		batch, err := s.store.ExpiredRuns(cutoff, s.cfg.Batch)
		if err != nil || len(batch) == 0 {
			if err != nil {
				return runs, txns, err
			}
			break
		}
		var subjects []string
		var seqs []uint64
		for _, r := range batch {
			subjects = append(subjects, eventlog.Subject(r.TenantID, eventlog.AggRun, r.RunID))
			for _, k := range r.DeliveryKeys {
				subjects = append(subjects, eventlog.Subject(r.TenantID, eventlog.AggDelivery, k))
			}
			seqs = append(seqs, r.InboxSeqs...)
		}
		if err := s.log.Purge(ctx, subjects, seqs); err != nil {
			return runs, txns, err
		}
		if err := s.store.ForgetRuns(batch); err != nil {
			return runs, txns, err
		}
		runs += len(batch)
	}
	for ctx.Err() == nil {
		batch, err := s.store.ExpiringTransactions(s.cfg.Batch)
		if err != nil || len(batch) == 0 {
			return runs, txns, err
		}
		subjects := make([]string, len(batch))
		for i, t := range batch {
			subjects[i] = eventlog.Subject(t.TenantID, eventlog.AggTransaction, t.TransactionID)
		}
		if err := s.log.Purge(ctx, subjects, nil); err != nil {
			return runs, txns, err
		}
		if err := s.store.ForgetTransactions(batch); err != nil {
			return runs, txns, err
		}
		txns += len(batch)
	}
	return runs, txns, ctx.Err()
}
