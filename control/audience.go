package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Audience limits (CONTRACT.md section 2).
const (
	MaxExternalIDChars  = 256
	MaxTopicKeyChars    = 128
	MaxContactKinds     = 16
	MaxAddressesPerKind = 10
	MaxAddressChars     = 320
	MaxAttributesBytes  = 64 << 10
	MaxLocaleChars      = 64
	MaxKindChars        = 64
	MaxTopicNameChars   = 256
	MaxTopicDescChars   = 1024
)

// ValidExternalID reports whether id is a valid subscriber externalId:
// 1–256 characters of valid UTF-8 with no control character (so never a
// zero byte). Dots, slashes, '@', spaces and any other Unicode are data.
func ValidExternalID(id string) bool {
	n := utf8.RuneCountInString(id)
	return n >= 1 && n <= MaxExternalIDChars && utf8.ValidString(id) && !hasControl(id, "")
}

// ValidTopicKey reports whether key is a valid topic key: 1–128 of
// [A-Za-z0-9._:-].
func ValidTopicKey(key string) bool {
	if len(key) < 1 || len(key) > MaxTopicKeyChars {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

func validKind(kind string) bool {
	if len(kind) < 1 || len(kind) > MaxKindChars {
		return false
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hasControl reports whether s holds a control character other than
// those in allowed.
func hasControl(s, allowed string) bool {
	for _, r := range s {
		if unicode.IsControl(r) && !strings.ContainsRune(allowed, r) {
			return true
		}
	}
	return false
}

func checkExternalID(p *Problems, field, id string) {
	if !ValidExternalID(id) {
		p.Add(field, "must be 1 to %d printable characters", MaxExternalIDChars)
	}
}

func checkTopicKey(p *Problems, field, key string) {
	if !ValidTopicKey(key) {
		p.Add(field, "must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", MaxTopicKeyChars)
	}
}

// SubscriberInput is the body of a subscriber upsert, kept raw so that an
// omitted field, a null and a value stay apart:
//
//   - Contacts: a kind given a non-empty list overwrites that kind, `[]`
//     or null clears it, a kind not given is kept. Contacts itself
//     omitted or null mentions no kind.
//   - Locale (a string) and Attributes (an object): omitted keeps the
//     current value, null clears it, a value overwrites it.
type SubscriberInput struct {
	Contacts   map[string]json.RawMessage `json:"contacts"`
	Locale     json.RawMessage            `json:"locale"`
	Attributes json.RawMessage            `json:"attributes"`
}

// subscriberPatch is a validated SubscriberInput.
type subscriberPatch struct {
	contacts   map[string][]string // a nil list clears the kind
	setLocale  bool
	locale     *string
	setAttrs   bool
	attributes json.RawMessage // nil clears
}

// isNull reports whether a raw JSON value given for a field is null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// parseSubscriberInput validates in on its own, naming each bad field.
func parseSubscriberInput(in SubscriberInput) (subscriberPatch, Problems) {
	var p Problems
	patch := subscriberPatch{contacts: map[string][]string{}}
	if len(in.Contacts) > MaxContactKinds {
		p.Add("contacts", "must have at most %d kinds", MaxContactKinds)
	}
	kinds := slices.Sorted(maps.Keys(in.Contacts))
	for _, kind := range kinds {
		field := "contacts." + kind
		raw := in.Contacts[kind]
		if !validKind(kind) {
			p.Add(field, "is not a valid kind: 1 to %d characters of A-Z, a-z, 0-9, '_' and '-'", MaxKindChars)
			continue
		}
		if isNull(raw) {
			patch.contacts[kind] = nil
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			p.Add(field, "must be an array of strings")
			continue
		}
		if len(items) > MaxAddressesPerKind {
			p.Add(field, "must have at most %d addresses", MaxAddressesPerKind)
			continue
		}
		addrs := make([]string, 0, len(items))
		for i, item := range items {
			afield := field + "[" + strconv.Itoa(i) + "]"
			var a string
			if err := json.Unmarshal(item, &a); err != nil {
				p.Add(afield, "must be a string")
				continue
			}
			if msg := addressProblem(kind, a); msg != "" {
				p.Add(afield, "%s", msg)
				continue
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			addrs = nil
		}
		patch.contacts[kind] = addrs
	}
	if in.Locale != nil {
		patch.setLocale = true
		if !isNull(in.Locale) {
			var loc string
			switch err := json.Unmarshal(in.Locale, &loc); {
			case err != nil:
				p.Add("locale", "must be a string")
			case loc == "":
				p.Add("locale", "must not be empty (null clears it)")
			case utf8.RuneCountInString(loc) > MaxLocaleChars:
				p.Add("locale", "must be at most %d characters", MaxLocaleChars)
			case hasControl(loc, ""):
				p.Add("locale", "must not contain control characters")
			default:
				patch.locale = &loc
			}
		}
	}
	if in.Attributes != nil {
		patch.setAttrs = true
		if !isNull(in.Attributes) {
			attrs, msg := normalizeObject(in.Attributes)
			switch {
			case msg != "":
				p.Add("attributes", "%s", msg)
			case len(attrs) > MaxAttributesBytes:
				p.Add("attributes", "must be at most 64 KiB")
			default:
				patch.attributes = attrs
			}
		}
	}
	return patch, p
}

// addressProblem says what is wrong with an address of kind, or "".
func addressProblem(kind, a string) string {
	switch {
	case a == "":
		return "must not be empty"
	case utf8.RuneCountInString(a) > MaxAddressChars:
		return "must be at most 320 characters"
	case !utf8.ValidString(a) || hasControl(a, ""):
		return "must not contain control characters"
	}
	if kind == "email" {
		m, err := mail.ParseAddress(a)
		if err != nil || m.Name != "" || m.Address != a {
			return "must be an email address (bare, as in name@example.com)"
		}
	}
	return ""
}

// normalizeObject returns raw as compact JSON, escaped the way the
// projections store it, or a problem when it is not a JSON object.
func normalizeObject(raw json.RawMessage) (json.RawMessage, string) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, "must be a JSON object"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, "must be a JSON object"
	}
	out, err := json.Marshal(json.RawMessage(buf.Bytes()))
	if err != nil {
		return nil, "must be a JSON object"
	}
	return out, ""
}

// apply merges the patch into cur (nil: a new subscriber) and returns the
// whole resulting state. It is pure.
func (patch subscriberPatch) apply(externalID string, cur *projections.Subscriber) (events.SubscriberUpsertedData, Problems) {
	next := events.SubscriberUpsertedData{SubscriberID: externalID, Contacts: map[string][]string{}}
	if cur != nil {
		maps.Copy(next.Contacts, cur.Contacts)
		next.Locale = cur.Locale
		next.Attributes = cur.Attributes
	}
	for kind, addrs := range patch.contacts {
		if len(addrs) == 0 {
			delete(next.Contacts, kind)
		} else {
			next.Contacts[kind] = addrs
		}
	}
	if patch.setLocale {
		next.Locale = patch.locale
	}
	if patch.setAttrs {
		next.Attributes = patch.attributes
	}
	var p Problems
	if len(next.Contacts) > MaxContactKinds {
		p.Add("contacts", "would have %d kinds; at most %d are allowed", len(next.Contacts), MaxContactKinds)
	}
	return next, p
}

// sameSubscriber reports whether next is cur's state already.
func sameSubscriber(cur projections.Subscriber, next events.SubscriberUpsertedData) bool {
	return maps.EqualFunc(cur.Contacts, next.Contacts, slices.Equal) &&
		equalPtr(cur.Locale, next.Locale) && bytes.Equal(cur.Attributes, next.Attributes)
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// UpsertSubscriber creates or updates a subscriber with the merge rules
// (see SubscriberInput) and returns its state as the projections now
// hold it, and whether it was created. An upsert that changes nothing
// appends no event. Errors: *ValidationError (ErrInvalid), ErrBusy.
//
// The first attempt trusts the local projection and expects the
// sequence it recorded for the subscriber (0 for none): when another
// process wrote since, the append conflicts and the next attempts settle
// on the subject's last sequence first. This saves a round trip to the
// server on the common path.
func (c *Control) UpsertSubscriber(ctx context.Context, tenant, externalID string, in SubscriberInput) (sub projections.Subscriber, created bool, err error) {
	var p Problems
	checkExternalID(&p, "externalId", externalID)
	patch, pp := parseSubscriberInput(in)
	if err := append(p, pp...).Err(); err != nil {
		return sub, false, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	optimistic := true
	err = retry(ctx, func() error {
		trusted := optimistic
		optimistic = false
		var seq uint64
		if !trusted {
			var err error
			if seq, err = c.settle(ctx, subject); err != nil {
				return err
			}
		}
		var cur *projections.Subscriber
		switch s, err := c.store.Subscriber(tenant, externalID); {
		case err == nil:
			cur = &s
		case !errors.Is(err, projections.ErrNotFound):
			return err
		}
		if trusted && cur != nil {
			seq = cur.Seq
		}
		next, p := patch.apply(externalID, cur)
		if err := p.Err(); err != nil {
			return err
		}
		if cur != nil && sameSubscriber(*cur, next) {
			if trusted {
				// Nothing to append, so nothing would catch a stale read:
				// check the subject moved no further than what we read.
				last, err := c.log.SubjectLastSeq(ctx, subject)
				if err != nil {
					return err
				}
				if last != seq {
					return eventlog.ErrConflict
				}
			}
			sub, created = *cur, false
			return nil
		}
		if _, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberUpserted,
			Tenant: tenant, Data: next, Expect: true, ExpectSeq: seq}); err != nil {
			return err
		}
		created = cur == nil
		sub, err = c.store.Subscriber(tenant, externalID)
		return err
	})
	return sub, created, err
}

// DeleteSubscriber deletes a subscriber and, with it, its subscriptions.
// Errors: ErrNotFound (subscriber_not_found), *ValidationError.
func (c *Control) DeleteSubscriber(ctx context.Context, tenant, externalID string) error {
	var p Problems
	checkExternalID(&p, "externalId", externalID)
	if err := p.Err(); err != nil {
		return err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	return retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		if _, err := c.store.Subscriber(tenant, externalID); err != nil {
			return subscriberErr(err, externalID)
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberDeleted, Tenant: tenant,
			Data: events.SubscriberDeletedData{SubscriberID: externalID}, Expect: true, ExpectSeq: seq})
		return err
	})
}

// Subscribe links a subscriber to a topic, creating the topic (key only)
// when absent, and reports whether the link is new. Subscribing again
// changes nothing. The event goes to the topic's subject without an
// expected sequence, so subscribes to one topic never conflict with each
// other, yet each one moves the subject a concurrent DeleteTopic expects.
// Errors: ErrNotFound (subscriber_not_found, also when the subscriber was
// deleted while subscribing), *ValidationError.
func (c *Control) Subscribe(ctx context.Context, tenant, externalID, topicKey string) (projections.Subscription, bool, error) {
	var p Problems
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
// ErrNotFound (subscription_not_found), *ValidationError.
func (c *Control) Unsubscribe(ctx context.Context, tenant, externalID, topicKey string) error {
	var p Problems
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
		return errorf(ErrNotFound, "subscription_not_found", "subscriber %q is not subscribed to topic %q", externalID, topicKey)
	} else if err != nil {
		return err
	}
	_, err := c.commit(ctx, eventlog.Record{Subject: topic, Type: events.SubscriberUnsubscribed, Tenant: tenant,
		Data: events.SubscriberUnsubscribedData{SubscriberID: externalID, TopicKey: topicKey}})
	return err
}

// TopicInput is the body of a topic upsert, raw like SubscriberInput:
// Name and Description omitted keep the current value, null clears it, a
// string overwrites it.
type TopicInput struct {
	Name        json.RawMessage `json:"name"`
	Description json.RawMessage `json:"description"`
}

// parseOptionalText validates one optional text field of a patch: set
// reports whether it was given; v is nil for null.
func parseOptionalText(p *Problems, field string, raw json.RawMessage, maxChars int, allowedCtl string) (v *string, set bool) {
	if raw == nil {
		return nil, false
	}
	if isNull(raw) {
		return nil, true
	}
	var s string
	switch err := json.Unmarshal(raw, &s); {
	case err != nil:
		p.Add(field, "must be a string")
	case utf8.RuneCountInString(s) > maxChars:
		p.Add(field, "must be at most %d characters", maxChars)
	case hasControl(s, allowedCtl):
		p.Add(field, "must not contain control characters")
	default:
		return &s, true
	}
	return nil, true
}

// mergeTopic applies a topic upsert to cur (nil: no such topic yet) and
// returns the whole resulting metadata, or a *ValidationError. It is pure.
func mergeTopic(key string, cur *projections.Topic, in TopicInput) (events.TopicUpsertedData, error) {
	var p Problems
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
// appends no event. Errors: *ValidationError, ErrBusy.
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
// Errors: ErrNotFound (topic_not_found), ErrConflict
// (topic_has_subscribers), *ValidationError.
func (c *Control) DeleteTopic(ctx context.Context, tenant, key string) error {
	var p Problems
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
				return errorf(ErrConflict, "topic_has_subscribers",
					"topic %q still has %d subscribers", key, t.SubscriberCount)
			}
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.TopicDeleted, Tenant: tenant,
			Data: events.TopicDeletedData{Key: key}, Expect: true, ExpectSeq: seq})
		return err
	})
}

// Subscriber returns one subscriber. Errors: ErrNotFound
// (subscriber_not_found), *ValidationError.
func (c *Control) Subscriber(tenant, externalID string) (projections.Subscriber, error) {
	var p Problems
	checkExternalID(&p, "externalId", externalID)
	if err := p.Err(); err != nil {
		return projections.Subscriber{}, err
	}
	s, err := c.store.Subscriber(tenant, externalID)
	return s, subscriberErr(err, externalID)
}

// Subscribers lists a tenant's subscribers in externalId order.
func (c *Control) Subscribers(tenant string, p projections.Page) ([]projections.Subscriber, string, error) {
	return c.store.Subscribers(tenant, p)
}

// SubscriberSubscriptions lists a subscriber's subscriptions in topic key
// order. Errors: ErrNotFound (subscriber_not_found), *ValidationError.
func (c *Control) SubscriberSubscriptions(tenant, externalID string, pg projections.Page) ([]projections.Subscription, string, error) {
	var p Problems
	checkExternalID(&p, "externalId", externalID)
	if err := p.Err(); err != nil {
		return nil, "", err
	}
	subs, next, err := c.store.SubscriberTopics(tenant, externalID, pg)
	return subs, next, subscriberErr(err, externalID)
}

// Topic returns one topic. Errors: ErrNotFound (topic_not_found),
// *ValidationError.
func (c *Control) Topic(tenant, key string) (projections.Topic, error) {
	var p Problems
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

// TopicSubscribers lists a topic's subscriptions in externalId order.
// Errors: ErrNotFound (topic_not_found), *ValidationError.
func (c *Control) TopicSubscribers(tenant, key string, pg projections.Page) ([]projections.Subscription, string, error) {
	var p Problems
	checkTopicKey(&p, "key", key)
	if err := p.Err(); err != nil {
		return nil, "", err
	}
	subs, next, err := c.store.TopicSubscribers(tenant, key, pg)
	return subs, next, topicErr(err, key)
}

func subscriberErr(err error, externalID string) error {
	if errors.Is(err, projections.ErrNotFound) {
		return errorf(ErrNotFound, "subscriber_not_found", "subscriber %q does not exist", externalID)
	}
	return err
}

func topicErr(err error, key string) error {
	if errors.Is(err, projections.ErrNotFound) {
		return errorf(ErrNotFound, "topic_not_found", "topic %q does not exist", key)
	}
	return err
}
