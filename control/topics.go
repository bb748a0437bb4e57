package control

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TopicInput is a topic upsert, raw JSON like SubscriberInput:
// Name and Description omitted keep the current value, null clears it, a
// string overwrites it.
type TopicInput struct {
	Name        json.RawMessage
	Description json.RawMessage
}

// mergeTopic applies a topic upsert to cur (nil: no such topic yet) and
// returns the whole resulting metadata, or a *apierr.ValidationError. It is pure.
func mergeTopic(key string, cur *projections.Topic, in TopicInput) (events.TopicUpsertedData, error) {
	var p apierr.Problems
	checkTopicKey(&p, "key", key)
	name, setName := parseOptionalText(&p, "name", in.Name, MaxTopicNameChars, "")
	desc, setDesc := parseOptionalText(&p, "description", in.Description, MaxTopicDescChars, "\n\r\t")
	if err := p.Err(); err != nil {
		return events.TopicUpsertedData{}, err
	}
	next := events.TopicUpsertedData{Key: key}
	if cur != nil {
		next.Name, next.Description = cur.Name, cur.Description
	}
	if setName {
		next.Name = name
	}
	if setDesc {
		next.Description = desc
	}
	return next, nil
}

// UpsertTopic creates or updates a topic's explicit metadata and reports
// whether the topic was created. A topic that exists only because someone
// subscribed to it counts as existing. An upsert that changes nothing
// appends no event. Errors: *apierr.ValidationError, apierr.ErrBusy.
func (c *Control) UpsertTopic(ctx context.Context, tenant, key string, in TopicInput) (t projections.Topic, created bool, err error) {
	if _, err := mergeTopic(key, nil, in); err != nil {
		return t, false, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggTopic, key)
	err = retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		var cur *projections.Topic
		switch tp, err := c.store.Topic(tenant, key); {
		case err == nil:
			cur = &tp
		case !errors.Is(err, projections.ErrNotFound):
			return err
		}
		next, err := mergeTopic(key, cur, in)
		if err != nil {
			return err
		}
		if cur != nil && equalPtr(cur.Name, next.Name) && equalPtr(cur.Description, next.Description) {
			t, created = *cur, false
			return nil
		}
		if _, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.TopicUpserted, Tenant: tenant,
			Data: next, Expect: true, ExpectSeq: seq}); err != nil {
			return err
		}
		created = cur == nil
		t, err = c.store.Topic(tenant, key)
		return err
	})
	return t, created, err
}

// DeleteTopic deletes a topic nobody is subscribed to. The delete expects
// the topic subject's sequence as of its check, and every subscribe
// appends to that subject: a subscribe that lands after the check makes
// the delete re-check, so it can never remove a topic with subscribers.
// Errors: apierr.ErrNotFound (topic_not_found), apierr.ErrConflict
// (topic_has_subscribers), *apierr.ValidationError.
func (c *Control) DeleteTopic(ctx context.Context, tenant, key string) error {
	var p apierr.Problems
	checkTopicKey(&p, "key", key)
	if err := p.Err(); err != nil {
		return err
	}
	subject := eventlog.Subject(tenant, eventlog.AggTopic, key)
	return retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		t, err := c.store.Topic(tenant, key)
		if err != nil {
			return topicErr(err, key)
		}
		if t.SubscriberCount > 0 {
			// A subscriber deleted through another process may not be
			// counted off yet: catch up with the whole log before refusing.
			if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
				return err
			}
			if t, err = c.store.Topic(tenant, key); err != nil {
				return topicErr(err, key)
			}
			if t.SubscriberCount > 0 {
				return apierr.Errorf(apierr.CodeTopicHasSubscribers,
					"topic %q still has %d subscribers", key, t.SubscriberCount)
			}
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.TopicDeleted, Tenant: tenant,
			Data: events.TopicDeletedData{Key: key}, Expect: true, ExpectSeq: seq})
		return err
	})
}

// Topic returns one topic. Errors: apierr.ErrNotFound (topic_not_found),
// *apierr.ValidationError.
func (c *Control) Topic(tenant, key string) (projections.Topic, error) {
	var p apierr.Problems
	checkTopicKey(&p, "key", key)
	if err := p.Err(); err != nil {
		return projections.Topic{}, err
	}
	t, err := c.store.Topic(tenant, key)
	return t, topicErr(err, key)
}

// Topics lists a tenant's topics in key order.
func (c *Control) Topics(tenant string, p projections.Page) ([]projections.Topic, string, error) {
	return c.store.Topics(tenant, p)
}
