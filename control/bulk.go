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
	res := make([]BulkResult, len(items))
	patches := make([]subscriberPatch, len(items))
	live := make([]bool, len(items)) // the item has not failed
	first := make(map[string]int, len(items))
	for i, it := range items {
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
		if res[i].Err = p.Err(); res[i].Err == nil {
			patches[i], live[i] = patch, true
		}
	}
	if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
		return nil, err
	}
	var ids []string
	for i, it := range items {
		if live[i] {
			ids = append(ids, it.ExternalID)
		}
	}
	found, err := c.store.SubscribersByID(tenant, ids)
	if err != nil {
		return nil, err
	}
	// links[i] is what the projection says of item i's subscriptions
	// (nil: none known, every topic is written; a repeated link is
	// ignored). A subscriber yet to be made has none.
	links := make([][]bool, len(items))
	var known []int
	var topics [][]string
	ids = ids[:0]
	k := 0
	for i, it := range items {
		if !live[i] {
			continue
		}
		if found[k] != nil && len(it.Topics) > 0 {
			ids, topics, known = append(ids, it.ExternalID), append(topics, it.Topics), append(known, i)
		}
		k++
	}
	subscribed, err := c.store.Subscribed(tenant, ids, topics)
	if err != nil {
		return nil, err
	}
	for k, i := range known {
		links[i] = subscribed[k]
	}
	var last uint64
	note := func(seq uint64) { last = max(last, seq) }

	// The subscribers, in one batch.
	recs := make([]eventlog.Record, 0, len(found))
	owner := make([]int, 0, len(found))
	k = 0
	for i, it := range items {
		if !live[i] {
			continue
		}
		cur := found[k]
		k++
		next, p := patches[i].apply(it.ExternalID, cur)
		if err := p.Err(); err != nil {
			res[i].Err, live[i] = err, false
			continue
		}
		if cur != nil && sameSubscriber(*cur, next) {
			continue // 200, nothing to write
		}
		var seq uint64
		if cur != nil {
			seq = cur.Seq
		}
		res[i].Created = cur == nil
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, it.ExternalID),
			Type: events.SubscriberUpserted, Tenant: tenant, Data: next, Expect: true, ExpectSeq: seq})
		owner = append(owner, i)
	}
	seqs, errs := c.log.AppendEach(ctx, recs)
	for k, i := range owner {
		switch err := errs[k]; {
		case err == nil:
			note(seqs[k])
		case errors.Is(err, eventlog.ErrConflict):
			// Another writer moved the subscriber: what the snapshot said
			// of its subscriptions may be stale too.
			_, res[i].Created, res[i].Err = c.UpsertSubscriber(ctx, tenant, items[i].ExternalID, items[i].Input)
			links[i] = nil
		default:
			res[i].Err = err
		}
		live[i] = res[i].Err == nil
	}

	// The subscriptions, one event per topic, in a second batch: after
	// their subscribers, whose events they must follow on the stream.
	// Each topic is named once per item, so an event holds at most
	// MaxBulkSubscribers ids.
	byTopic := map[string]int{} // topic → its group
	var groups []linkGroup
	added := make([][]string, len(items)) // the topics of item i written
	for i, it := range items {
		if !live[i] {
			continue
		}
		for k, key := range it.Topics {
			if slices.Contains(it.Topics[:k], key) || links[i] != nil && links[i][k] {
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
	recs = recs[:0]
	for _, g := range groups {
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTopic, g.topic),
			Type: events.SubscribersSubscribed, Tenant: tenant,
			Data: events.SubscribersSubscribedData{TopicKey: g.topic, SubscriberIDs: g.ids}})
	}
	seqs, errs = c.log.AppendEach(ctx, recs)
	for k, g := range groups {
		if errs[k] != nil {
			for _, i := range g.items {
				res[i].Err = firstErr(res[i].Err, errs[k])
			}
			continue
		}
		note(seqs[k])
	}
	if err := c.store.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	// The projection ignores a link whose subscriber was deleted in
	// between, as Subscribe reports.
	ids, topics = ids[:0], topics[:0]
	var asked []int
	for i, t := range added {
		if len(t) > 0 && res[i].Err == nil {
			ids, topics, asked = append(ids, items[i].ExternalID), append(topics, t), append(asked, i)
		}
	}
	now, err := c.store.Subscribed(tenant, ids, topics)
	if err != nil {
		return nil, err
	}
	for k, i := range asked {
		if slices.Contains(now[k], false) {
			res[i].Err = subscriberErr(projections.ErrNotFound, items[i].ExternalID)
		}
	}
	return res, nil
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
