package eventlog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Filter selects the events Replay hands over. The zero Filter selects
// every event from the first, and stops at the end of the log.
type Filter struct {
	// Tenant keeps only one tenant's events (a subject filter, so the
	// server skips the others). Zero: every tenant.
	Tenant string
	// Types keeps only events of these types. Zero: every type.
	Types []string
	// Since keeps only events whose time (the envelope's "at") is at or
	// after this instant. Zero: from the first event.
	Since time.Time
	// Follow keeps following the log after its end until ctx ends. Zero
	// (false): Replay returns once it has handed over the last event the
	// log held when it started.
	Follow bool
}

// tenantPattern is what a tenant id looks like inside a subject: one
// token of the characters ids are minted from.
var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Validate reports a filter Replay cannot apply, wrapping ErrBadFilter.
func (f Filter) Validate() error {
	if f.Tenant != "" && !tenantPattern.MatchString(f.Tenant) {
		return fmt.Errorf("%w: tenant %q is not a tenant id", ErrBadFilter, f.Tenant)
	}
	return nil
}

// sinceSlack widens the start of a Since replay: the stream's storage time
// of an event is a little later than its "at" (set by the writer before it
// published), and clocks of processes differ. Events are then filtered on
// "at" itself.
const sinceSlack = time.Minute

// Replay hands the events that match f to fn, in log order. It returns
// fn's first error, ctx's error when ctx ends (a Follow replay always ends
// so), or nil once the last event the log held at the start was handed
// over. A filter that fails Validate is an error wrapping ErrBadFilter.
func (l *Log) Replay(ctx context.Context, f Filter, fn func(Event) error) error {
	if err := f.Validate(); err != nil {
		return err
	}
	opts := TailOptions{Buffer: 1024}
	if f.Tenant != "" {
		opts.Filters = []string{TenantFilter(f.Tenant)}
	}
	if !f.Since.IsZero() {
		opts.Since = f.Since.Add(-sinceSlack)
	}
	var end uint64
	if !f.Follow {
		var err error
		if end, err = l.replayEnd(ctx, opts); err != nil || end == 0 {
			return err
		}
	}
	tail, err := l.Tail(ctx, opts)
	if err != nil {
		return err
	}
	defer tail.Stop()
	for {
		evs, err := tail.Next(ctx, 512)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if f.keeps(ev) {
				if err := fn(ev); err != nil {
					return err
				}
			}
			if end > 0 && ev.Seq >= end {
				return nil
			}
		}
	}
}

// replayEnd returns the sequence of the last event a replay with opts
// would meet in the log as it is now, or 0 when it would meet none.
func (l *Log) replayEnd(ctx context.Context, opts TailOptions) (uint64, error) {
	var seq uint64
	var at time.Time
	if len(opts.Filters) == 0 {
		var info *jetstream.StreamInfo
		err := l.retrying(ctx, func(ctx context.Context) (err error) {
			info, err = l.events.Info(ctx)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("eventlog: replay: %w", err)
		}
		seq, at = info.State.LastSeq, info.State.LastTime
	} else {
		// The last message of a wildcard subject: one direct get.
		m, err := l.lastMsg(ctx, opts.Filters[0])
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("eventlog: replay: %w", err)
		}
		seq, at = m.Sequence, m.Time
	}
	// A tail that starts at a time delivers nothing when even the last
	// event is older: stop before waiting for it.
	if !opts.Since.IsZero() && at.Before(opts.Since) {
		return 0, nil
	}
	return seq, nil
}

func (f Filter) keeps(ev Event) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, ev.Type) {
		return false
	}
	return f.Since.IsZero() || !ev.At.Before(f.Since)
}
