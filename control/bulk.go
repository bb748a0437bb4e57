package control

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Limits of the bulk commands.
const (
	// MaxBulkSubscribers bounds the items of one UpsertSubscribers.
	MaxBulkSubscribers = 1000
	// MaxBulkTriggers bounds the triggers of one bulk trigger request.
	MaxBulkTriggers = 100
	// MaxSubscriberTopics bounds the topics one bulk item subscribes its
	// subscriber to.
	MaxSubscriberTopics = 100
)

// BulkSubscriber is one item of UpsertSubscribers: the upsert of
// UpsertSubscriber, then the subscription of the subscriber to each of
// Topics (repeats count once).
type BulkSubscriber struct {
	ExternalID string
	Input      SubscriberInput
	Topics     []string
}

// BulkResult is the outcome of one item of a bulk command: Err is what
// the single command would have failed with (nil: done).
type BulkResult struct {
	// Created reports whether the item created its resource.
	Created bool
	Err     error
}

// CheckBulkCount refuses a bulk request of n items, field naming its list,
// unless it holds 1 to max of them.
func CheckBulkCount(field string, n, max int) error {
	if n < 1 || n > max {
		var p apierr.Problems
		p.Add(field, "must hold 1 to %d items (it holds %d)", max, n)
		return p.Err()
	}
	return nil
}

// UpsertSubscribers upserts many subscribers and subscribes each to its
// topics, and reports each item's outcome in order: an item fails on its
// own (validation as UpsertSubscriber and Subscribe validate, a subscriber
// id repeated within the request, a write that failed) and never fails the
// others. The error is for the request as a whole: more than
// MaxBulkSubscribers items, or the projections could not be read.
//
// It reads every item's subscriber and subscriptions from one snapshot of
// the projections caught up with the stream (as of the call), appends
// every changed subscriber in one batch, each expecting the sequence the
// projection recorded for it, then one SubscribersSubscribed per topic
// (its new links, on the topic's subject as every subscribe is, so a
// concurrent DeleteTopic conflicts) in a second batch, and waits once for
// the projections to apply them. An item whose subscriber another writer
// moved in between (a conflict) is upserted again the way
// UpsertSubscriber does, alone. A request repeated writes nothing.
func (c *Control) UpsertSubscribers(ctx context.Context, tenant string, items []BulkSubscriber) ([]BulkResult, error) {
	if err := CheckBulkCount("subscribers", len(items), MaxBulkSubscribers); err != nil {
		return nil, err
	}
	b := newBulkUpsert(c, tenant, items)
	b.check()
	if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
		return nil, err
	}
	found, err := b.snapshot()
	if err != nil {
		return nil, err
	}
	b.writeSubscribers(ctx, found)
	added := b.writeSubscriptions(ctx)
	if err := c.store.WaitFor(ctx, b.last); err != nil {
		return nil, err
	}
	if err := b.confirm(added); err != nil {
		return nil, err
	}
	return b.res, nil
}

// bulkUpsert is one UpsertSubscribers under way: its steps, in order, are
// check, snapshot, writeSubscribers, writeSubscriptions and confirm.
type bulkUpsert struct {
	c      *Control
	tenant string
	items  []BulkSubscriber
	res    []BulkResult
	// patches[i] is item i's parsed input, valid while live[i].
	patches []subscriberPatch
	// live[i] reports that item i has not failed.
	live []bool
	// links[i] is what the projection says of item i's subscriptions (nil:
	// none known, every topic is written; a repeated link is ignored). A
	// subscriber yet to be made has none.
	links [][]bool
	// last is the highest sequence appended.
	last uint64
}

func newBulkUpsert(c *Control, tenant string, items []BulkSubscriber) *bulkUpsert {
	return &bulkUpsert{c: c, tenant: tenant, items: items, res: make([]BulkResult, len(items)),
		patches: make([]subscriberPatch, len(items)), live: make([]bool, len(items)), links: make([][]bool, len(items))}
}

// check validates each item on its own, as UpsertSubscriber and Subscribe
// do, and fails the items repeating an earlier one's subscriber id.
func (b *bulkUpsert) check() {
	first := make(map[string]int, len(b.items))
	for i, it := range b.items {
		var p apierr.Problems
		checkExternalID(&p, "subscriberId", it.ExternalID)
		patch, pp := parseSubscriberInput(it.Input)
		p = append(p, pp...)
		if len(it.Topics) > MaxSubscriberTopics {
			p.Add("topics", "must name at most %d topics", MaxSubscriberTopics)
		}
		for k, key := range it.Topics {
			checkTopicKey(&p, "topics["+strconv.Itoa(k)+"]", key)
		}
		if j, seen := first[it.ExternalID]; seen {
			p.Add("subscriberId", "repeats item %d of this request", j)
		} else {
			first[it.ExternalID] = i
		}
		if b.res[i].Err = p.Err(); b.res[i].Err == nil {
			b.patches[i], b.live[i] = patch, true
		}
	}
}

// snapshot reads the subscriber of every live item (found, in the order of
// the live items: nil for one yet to be made) and the links of those that
// exist.
func (b *bulkUpsert) snapshot() (found []*projections.Subscriber, err error) {
	var ids []string
	for i, it := range b.items {
		if b.live[i] {
			ids = append(ids, it.ExternalID)
		}
	}
	if found, err = b.c.store.SubscribersByID(b.tenant, ids); err != nil {
		return nil, err
	}
	var known []int
	var topics [][]string
	ids = ids[:0]
	k := 0
	for i, it := range b.items {
		if !b.live[i] {
			continue
		}
		if found[k] != nil && len(it.Topics) > 0 {
			ids, topics, known = append(ids, it.ExternalID), append(topics, it.Topics), append(known, i)
		}
		k++
	}
	subscribed, err := b.c.store.Subscribed(b.tenant, ids, topics)
	if err != nil {
		return nil, err
	}
	for k, i := range known {
		b.links[i] = subscribed[k]
	}
	return found, nil
}

// note records that an append landed at seq.
func (b *bulkUpsert) note(seq uint64) { b.last = max(b.last, seq) }

// writeSubscribers appends every changed subscriber in one batch, each
// expecting the sequence found recorded for it. An item whose subscriber
// another writer moved in between is upserted again alone, as
// UpsertSubscriber does.
func (b *bulkUpsert) writeSubscribers(ctx context.Context, found []*projections.Subscriber) {
	recs := make([]eventlog.Record, 0, len(found))
	owner := make([]int, 0, len(found))
	k := 0
	for i, it := range b.items {
		if !b.live[i] {
			continue
		}
		cur := found[k]
		k++
		next, p := b.patches[i].apply(it.ExternalID, cur)
		if err := p.Err(); err != nil {
			b.res[i].Err, b.live[i] = err, false
			continue
		}
		if cur != nil && sameSubscriber(*cur, next) {
			continue // 200, nothing to write
		}
		var seq uint64
		if cur != nil {
			seq = cur.Seq
		}
		b.res[i].Created = cur == nil
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(b.tenant, eventlog.AggSubscriber, it.ExternalID),
			Type: events.SubscriberUpserted, Tenant: b.tenant, Data: next, Expect: true, ExpectSeq: seq})
		owner = append(owner, i)
	}
	seqs, errs := b.c.log.AppendEach(ctx, recs)
	for k, i := range owner {
		switch err := errs[k]; {
		case err == nil:
			b.note(seqs[k])
		case errors.Is(err, eventlog.ErrConflict):
			// Another writer moved the subscriber: what the snapshot said
			// of its subscriptions may be stale too.
			_, b.res[i].Created, b.res[i].Err = b.c.UpsertSubscriber(ctx, b.tenant, b.items[i].ExternalID, b.items[i].Input)
			b.links[i] = nil
		default:
			b.res[i].Err = err
		}
		b.live[i] = b.res[i].Err == nil
	}
}

// writeSubscriptions appends the new links, one event per topic, in a
// second batch: after their subscribers, whose events they must follow on
// the stream. Each topic is named once per item, so an event holds at most
// MaxBulkSubscribers ids. It returns the topics of each item written.
func (b *bulkUpsert) writeSubscriptions(ctx context.Context) (added [][]string) {
	byTopic := map[string]int{} // topic → its group
	var groups []linkGroup
	added = make([][]string, len(b.items))
	for i, it := range b.items {
		if !b.live[i] {
			continue
		}
		for k, key := range it.Topics {
			if slices.Contains(it.Topics[:k], key) || b.links[i] != nil && b.links[i][k] {
				continue // repeated, or subscribed already
			}
			g, ok := byTopic[key]
			if !ok {
				g = len(groups)
				byTopic[key] = g
				groups = append(groups, linkGroup{topic: key})
			}
			groups[g].ids = append(groups[g].ids, it.ExternalID)
			groups[g].items = append(groups[g].items, i)
			added[i] = append(added[i], key)
		}
	}
	recs := make([]eventlog.Record, 0, len(groups))
	for _, g := range groups {
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(b.tenant, eventlog.AggTopic, g.topic),
			Type: events.SubscribersSubscribed, Tenant: b.tenant,
			Data: events.SubscribersSubscribedData{TopicKey: g.topic, SubscriberIDs: g.ids}})
	}
	seqs, errs := b.c.log.AppendEach(ctx, recs)
	for k, g := range groups {
		if errs[k] != nil {
			for _, i := range g.items {
				b.res[i].Err = firstErr(b.res[i].Err, errs[k])
			}
			continue
		}
		b.note(seqs[k])
	}
	return added
}

// confirm fails the items a link of which the projection ignored: the
// projection ignores a link whose subscriber was deleted in between, as
// Subscribe reports.
func (b *bulkUpsert) confirm(added [][]string) error {
	var ids []string
	var topics [][]string
	var asked []int
	for i, t := range added {
		if len(t) > 0 && b.res[i].Err == nil {
			ids, topics, asked = append(ids, b.items[i].ExternalID), append(topics, t), append(asked, i)
		}
	}
	now, err := b.c.store.Subscribed(b.tenant, ids, topics)
	if err != nil {
		return err
	}
	for k, i := range asked {
		if slices.Contains(now[k], false) {
			b.res[i].Err = subscriberErr(projections.ErrNotFound, b.items[i].ExternalID)
		}
	}
	return nil
}

// linkGroup is the new links of one topic in a bulk request: the
// subscriber ids, and the item of each.
type linkGroup struct {
	topic string
	ids   []string
	items []int
}

// firstErr returns the first of two errors that is not nil.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
