package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
)

// The follower compares the tenants it follows with the tenants that have
// endpoints when the projections applied an endpoint's creation or
// deletion (it looks every followPoll), and every followEvery (to retry a
// tenant whose sources could not start). An endpoint's first events are
// not missed in between: a tenant's sources start at the sequence after
// its oldest endpoint's creation.
const (
	followPoll  = 20 * time.Millisecond
	followEvery = time.Second
)

// followedAggregates are the aggregates whose subjects a followed tenant's
// sources read, one consumer of a single filter subject each: a consumer of
// several filters makes the NATS server search its stream per message.
var followedAggregates = []string{eventlog.AggRun, eventlog.AggDelivery, eventlog.AggInbox}

// sourceName is the durable name of a tenant's source of one aggregate.
// Minted tenant ids are subject tokens, valid in a consumer name.
func sourceName(tenant, aggregate string) string {
	return sourceConsumer + "-" + tenant + "-" + aggregate
}

// sourceFilter is the EVENTS subject filter of a tenant's source of one
// aggregate.
func sourceFilter(tenant, aggregate string) string {
	return "ev." + tenant + "." + aggregate + ".*"
}

// follower keeps one durable source consumer per (tenant with an endpoint,
// followed aggregate) and consumes them into taken, so that the events of
// a tenant without endpoints cost nothing: they are neither delivered to
// nor acknowledged by any herald process. Every process follows the same
// tenants through the same durable consumers; a tenant's consumers are
// created by the first process that sees its first endpoint and deleted
// by one whose projections, caught up with the log, show it has none left.
type follower struct {
	d     *Dispatcher
	taken chan<- jetstream.Msg

	// legacy holds, per aggregate, the acknowledged floor of the source
	// consumer of every tenant that an earlier version kept (one per
	// aggregate, named sourceConsumer-<aggregate>), read before run prunes
	// it: a tenant's sources created then start after it, so the events
	// those consumers had handled are not sent again.
	legacy map[string]uint64

	mu       sync.Mutex
	followed map[string][]jetstream.ConsumeContext // tenant → its sources' consumptions
}

// run follows the tenants with endpoints until ctx ends, then stops every
// consumption.
func (f *follower) run(ctx context.Context) {
	defer f.stopAll()
	f.legacy = f.legacyFloors(ctx)
	f.prune(ctx, true)
	poll := time.NewTicker(followPoll)
	defer poll.Stop()
	last := time.Now()
	for gen := f.d.cfg.Store.EndpointsGeneration(); ; {
		f.reconcile(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
			}
			if g := f.d.cfg.Store.EndpointsGeneration(); g != gen || time.Since(last) >= followEvery {
				gen, last = g, time.Now()
				break
			}
		}
	}
}

// reconcile starts following the tenants that have endpoints and stops
// (deleting their consumers) those that have none left.
func (f *follower) reconcile(ctx context.Context) {
	want, err := f.d.cfg.Store.WebhookTenants()
	if err != nil {
		f.d.log.Warn("webhooks: endpoints not read; the followed tenants are unchanged", "err", err)
		return
	}
	for tenant, seq := range want {
		if f.following(tenant) {
			continue
		}
		if err := f.follow(ctx, tenant, seq); err != nil && ctx.Err() == nil {
			f.d.log.Warn("webhooks: a tenant's sources not started; trying again", "tenant", tenant, "err", err)
		}
	}
	f.mu.Lock()
	var gone []string
	for tenant := range f.followed {
		if _, ok := want[tenant]; !ok {
			gone = append(gone, tenant)
		}
	}
	f.mu.Unlock()
	if len(gone) > 0 {
		f.prune(ctx, false)
	}
}

// following reports whether the tenant's sources are being consumed. A
// consumption that ended (its consumer was deleted by a process that saw
// the tenant's last endpoint go) is forgotten, so that the tenant is
// followed anew if it has an endpoint again.
func (f *follower) following(tenant string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	ccs, ok := f.followed[tenant]
	if !ok {
		return false
	}
	for _, cc := range ccs {
		select {
		case <-cc.Closed():
		default:
			continue
		}
		for _, cc := range ccs {
			cc.Stop()
		}
		delete(f.followed, tenant)
		return false
	}
	return true
}

// follow creates (or finds) the tenant's sources, starting after seq, the
// creation of its oldest endpoint, and consumes them.
func (f *follower) follow(ctx context.Context, tenant string, seq uint64) error {
	var ccs []jetstream.ConsumeContext
	for _, agg := range followedAggregates {
		c, err := f.source(ctx, tenant, agg, max(seq, f.legacy[agg])+1)
		if err == nil {
			var cc jetstream.ConsumeContext
			cc, err = c.Consume(func(m jetstream.Msg) {
				select {
				case f.taken <- m:
				case <-ctx.Done():
					_ = m.Nak()
				}
			}, jetstream.PullMaxMessages(64), jetstream.PullHeartbeat(2*time.Second))
			ccs = append(ccs, cc)
		}
		if err != nil {
			for _, cc := range ccs {
				if cc != nil {
					cc.Stop()
				}
			}
			return err
		}
	}
	f.mu.Lock()
	f.followed[tenant] = ccs
	f.mu.Unlock()
	f.d.log.Debug("webhooks: following a tenant", "tenant", tenant, "from", seq+1)
	return nil
}

// source returns the tenant's durable source of one aggregate, creating it
// to start at start when it does not exist. An existing one keeps its
// position.
func (f *follower) source(ctx context.Context, tenant, agg string, start uint64) (jetstream.Consumer, error) {
	js := f.d.cfg.Log.JetStream()
	name := sourceName(tenant, agg)
	c, err := js.Consumer(ctx, eventlog.EventsStream, name)
	if err == nil || !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return c, err
	}
	c, err = js.CreateConsumer(ctx, eventlog.EventsStream, jetstream.ConsumerConfig{
		Durable:       name,
		FilterSubject: sourceFilter(tenant, agg),
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:   start,
		// Most events of these subjects concern no endpoint: their bodies
		// (step outputs up to 1 MiB) are not sent here.
		HeadersOnly:   true,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       f.d.cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: maxInFlight,
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		return js.Consumer(ctx, eventlog.EventsStream, name)
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: consumer %s: %w", name, err)
	}
	return c, nil
}

// prune deletes the source consumers of tenants without endpoints, once
// the projections caught up with the log (a process that has not yet seen
// an endpoint's creation must not delete what another process created for
// it). all: look at every source consumer on the stream, not only the
// ones this process follows (at start, after a downtime, and the sources
// of an earlier layout).
func (f *follower) prune(ctx context.Context, all bool) {
	if err := f.d.cfg.Store.WaitCaughtUp(ctx, f.d.cfg.Log); err != nil {
		if ctx.Err() == nil {
			f.d.log.Warn("webhooks: projections not caught up; sources not pruned", "err", err)
		}
		return
	}
	want, err := f.d.cfg.Store.WebhookTenants()
	if err != nil {
		f.d.log.Warn("webhooks: endpoints not read; sources not pruned", "err", err)
		return
	}
	keep := map[string]bool{}
	for tenant := range want {
		for _, agg := range followedAggregates {
			keep[sourceName(tenant, agg)] = true
		}
	}
	f.mu.Lock()
	var stop []jetstream.ConsumeContext
	var names []string
	for tenant, ccs := range f.followed {
		if _, ok := want[tenant]; !ok {
			stop = append(stop, ccs...)
			delete(f.followed, tenant)
			for _, agg := range followedAggregates {
				names = append(names, sourceName(tenant, agg))
			}
		}
	}
	f.mu.Unlock()
	for _, cc := range stop {
		cc.Stop()
	}
	js := f.d.cfg.Log.JetStream()
	if all {
		names = append(names, f.stale(ctx, keep)...)
	}
	for _, name := range names {
		if err := js.DeleteConsumer(ctx, eventlog.EventsStream, name); err != nil &&
			!errors.Is(err, jetstream.ErrConsumerNotFound) && ctx.Err() == nil {
			f.d.log.Warn("webhooks: a source of a tenant without endpoints not deleted", "consumer", name, "err", err)
		}
	}
}

// stopAll stops consuming every followed tenant's sources; their consumers
// stay for the next process.
func (f *follower) stopAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tenant, ccs := range f.followed {
		for _, cc := range ccs {
			cc.Stop()
		}
		delete(f.followed, tenant)
	}
}

// stale lists the source consumers on the stream that keep does not name.
func (f *follower) stale(ctx context.Context, keep map[string]bool) []string {
	st, err := f.d.cfg.Log.JetStream().Stream(ctx, eventlog.EventsStream)
	if err != nil {
		f.d.log.Warn("webhooks: stream not read; stale sources kept", "err", err)
		return nil
	}
	var names []string
	lister := st.ListConsumers(ctx)
	for info := range lister.Info() {
		if strings.HasPrefix(info.Name, sourceConsumer+"-") && !keep[info.Name] {
			names = append(names, info.Name)
		}
	}
	if err := lister.Err(); err != nil {
		f.d.log.Warn("webhooks: consumers not listed; stale sources kept", "err", err)
	}
	return names
}

// legacyFloors reads the acknowledged floors of the per-aggregate source
// consumers of an earlier version, where they still exist.
func (f *follower) legacyFloors(ctx context.Context) map[string]uint64 {
	out := map[string]uint64{}
	js := f.d.cfg.Log.JetStream()
	for _, agg := range followedAggregates {
		c, err := js.Consumer(ctx, eventlog.EventsStream, sourceConsumer+"-"+agg)
		if err != nil {
			continue
		}
		out[agg] = c.CachedInfo().AckFloor.Stream
	}
	return out
}
