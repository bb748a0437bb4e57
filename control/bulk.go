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
// It reads the projections once caught up with the stream (as of the
// call), appends every changed subscriber in one batch, each expecting the
// sequence the projection recorded for it, then every new subscription in
// a second batch, and waits once for the projections to apply them. An
// item whose subscriber another writer moved in between (a conflict) is
// upserted again the way UpsertSubscriber does, alone.
func (c *Control) UpsertSubscribers(ctx context.Context, tenant string, items []BulkSubscriber) ([]BulkResult, error) {
	if err := CheckBulkCount("subscribers", len(items), MaxBulkSubscribers); err != nil {
		return nil, err
	}
	res := make([]BulkResult, len(items))
	patches := make([]subscriberPatch, len(items))
	live := make([]bool, len(items)) // the item has not failed
	first := map[string]int{}
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
	var last uint64
	note := func(seq uint64) { last = max(last, seq) }

	// The subscribers, in one batch.
	var recs []eventlog.Record
	var owner []int
	for i, it := range items {
		if !live[i] {
			continue
		}
		var cur *projections.Subscriber
		switch s, err := c.store.Subscriber(tenant, it.ExternalID); {
		case err == nil:
			cur = &s
		case !errors.Is(err, projections.ErrNotFound):
			return nil, err
		}
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
			_, res[i].Created, res[i].Err = c.UpsertSubscriber(ctx, tenant, items[i].ExternalID, items[i].Input)
		default:
			res[i].Err = err
		}
		live[i] = res[i].Err == nil
	}

	// The subscriptions, in a second batch: after their subscribers, whose
	// events they must follow on the stream.
	recs, owner = recs[:0], owner[:0]
	var topics []string
	for i, it := range items {
		if !live[i] {
			continue
		}
		for k, key := range it.Topics {
			if slices.Contains(it.Topics[:k], key) {
				continue
			}
			if _, err := c.store.Subscription(tenant, it.ExternalID, key); err == nil {
				continue // subscribed already
			}
			recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTopic, key),
				Type: events.SubscriberSubscribed, Tenant: tenant,
				Data: events.SubscriberSubscribedData{SubscriberID: it.ExternalID, TopicKey: key}})
			owner, topics = append(owner, i), append(topics, key)
		}
	}
	seqs, errs = c.log.AppendEach(ctx, recs)
	for k, i := range owner {
		if errs[k] != nil {
			res[i].Err = firstErr(res[i].Err, errs[k])
			continue
		}
		note(seqs[k])
	}
	if err := c.store.WaitFor(ctx, last); err != nil {
		return nil, err
	}
	// The projection ignores a subscription whose subscriber was deleted
	// in between, as Subscribe reports.
	for k, i := range owner {
		if errs[k] != nil || res[i].Err != nil {
			continue
		}
		if _, err := c.store.Subscription(tenant, items[i].ExternalID, topics[k]); err != nil {
			res[i].Err = subscriberErr(err, items[i].ExternalID)
		}
	}
	return res, nil
}

// firstErr returns the first of two errors that is not nil.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
