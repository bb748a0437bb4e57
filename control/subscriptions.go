package control

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Subscribe links a subscriber to a topic, creating the topic (key only)
// when absent, and reports whether the link is new. Subscribing again
// changes nothing. The event goes to the topic's subject without an
// expected sequence, so subscribes to one topic never conflict with each
// other, yet each one moves the subject a concurrent DeleteTopic expects.
// Errors: apierr.ErrNotFound (subscriber_not_found, also when the subscriber was
// deleted while subscribing), *apierr.ValidationError.
func (c *Control) Subscribe(ctx context.Context, tenant, externalID, topicKey string) (projections.Subscription, bool, error) {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	checkTopicKey(&p, "topicKey", topicKey)
	if err := p.Err(); err != nil {
		return projections.Subscription{}, false, err
	}
	if _, err := c.settle(ctx, eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)); err != nil {
		return projections.Subscription{}, false, err
	}
	if _, err := c.store.Subscriber(tenant, externalID); err != nil {
		return projections.Subscription{}, false, subscriberErr(err, externalID)
	}
	topic := eventlog.Subject(tenant, eventlog.AggTopic, topicKey)
	if _, err := c.store.Subscription(tenant, externalID, topicKey); err == nil {
		// Answer "already subscribed" only from a projection that holds
		// the topic's last event: another process may have unsubscribed.
		if _, err := c.settle(ctx, topic); err != nil {
			return projections.Subscription{}, false, err
		}
		if s, err := c.store.Subscription(tenant, externalID, topicKey); err == nil {
			return s, false, nil
		}
	}
	seq, err := c.commit(ctx, eventlog.Record{Subject: topic,
		Type: events.SubscriberSubscribed, Tenant: tenant,
		Data: events.SubscriberSubscribedData{SubscriberID: externalID, TopicKey: topicKey}})
	if err != nil {
		return projections.Subscription{}, false, err
	}
	// The projection ignored the event if the subscriber was deleted in
	// between, and kept the first link if another subscribe won.
	s, err := c.store.Subscription(tenant, externalID, topicKey)
	if err != nil {
		return s, false, subscriberErr(err, externalID)
	}
	return s, s.Seq == seq, nil
}

// Unsubscribe removes the link between a subscriber and a topic. Errors:
// apierr.ErrNotFound (subscription_not_found), *apierr.ValidationError.
func (c *Control) Unsubscribe(ctx context.Context, tenant, externalID, topicKey string) error {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	checkTopicKey(&p, "topicKey", topicKey)
	if err := p.Err(); err != nil {
		return err
	}
	topic := eventlog.Subject(tenant, eventlog.AggTopic, topicKey)
	for _, subject := range []string{eventlog.Subject(tenant, eventlog.AggSubscriber, externalID), topic} {
		if _, err := c.settle(ctx, subject); err != nil {
			return err
		}
	}
	if _, err := c.store.Subscription(tenant, externalID, topicKey); errors.Is(err, projections.ErrNotFound) {
		return apierr.Errorf(apierr.CodeSubscriptionNotFound, "subscriber %q is not subscribed to topic %q", externalID, topicKey)
	} else if err != nil {
		return err
	}
	_, err := c.commit(ctx, eventlog.Record{Subject: topic, Type: events.SubscriberUnsubscribed, Tenant: tenant,
		Data: events.SubscriberUnsubscribedData{SubscriberID: externalID, TopicKey: topicKey}})
	return err
}

// SubscriberSubscriptions lists a subscriber's subscriptions in topic key
// order. Errors: apierr.ErrNotFound (subscriber_not_found), *apierr.ValidationError.
func (c *Control) SubscriberSubscriptions(tenant, externalID string, pg projections.Page) ([]projections.Subscription, string, error) {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	if err := p.Err(); err != nil {
		return nil, "", err
	}
	subs, next, err := c.store.SubscriberTopics(tenant, externalID, pg)
	return subs, next, subscriberErr(err, externalID)
}

// TopicSubscribers lists a topic's subscriptions in externalId order.
// Errors: apierr.ErrNotFound (topic_not_found), *apierr.ValidationError.
func (c *Control) TopicSubscribers(tenant, key string, pg projections.Page) ([]projections.Subscription, string, error) {
	var p apierr.Problems
	checkTopicKey(&p, "key", key)
	if err := p.Err(); err != nil {
		return nil, "", err
	}
	subs, next, err := c.store.TopicSubscribers(tenant, key, pg)
	return subs, next, topicErr(err, key)
}
