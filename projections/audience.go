package projections

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// The audience read model. External ids and topic keys never hold a zero
// byte (both are validated), so tenant\x00a\x00b keys cannot collide.
var (
	bucketSubscribers      = []byte("subscribers")       // tenant\x00externalId → Subscriber
	bucketTopics           = []byte("topics")            // tenant\x00key → Topic
	bucketTopicMembers     = []byte("topic_members")     // tenant\x00key\x00externalId → membership
	bucketSubscriberTopics = []byte("subscriber_topics") // tenant\x00externalId\x00key → membership
)

// Subscriber is the read model of a subscriber.
type Subscriber struct {
	SubscriberID string `json:"subscriberId"`
	// Contacts maps a channel kind to its addresses, in the order given.
	// A kind with no address is absent. Never nil.
	Contacts map[string][]string `json:"contacts"`
	// Locale is nil when the subscriber has none.
	Locale *string `json:"locale,omitempty"`
	// Attributes is a compact JSON object, or nil when there is none.
	Attributes json.RawMessage `json:"attributes,omitempty"`
	// Timezone is an IANA time zone name, nil when the subscriber has none.
	Timezone  *string   `json:"timezone,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Seq is the stream sequence of the subscriber's last event: a writer
	// may expect it instead of asking the log for the subject's last one.
	Seq uint64 `json:"seq"`
	// TokenEpoch is the stream sequence of the subscriber's creation or of
	// the last revocation of its inbox tokens (InboxTokensRevoked),
	// whichever is later: an inbox token carries the epoch it was minted
	// in and is accepted only while it is the subscriber's, so neither a
	// revoked token nor one of a deleted subscriber created again under
	// the same id opens the inbox. Zero for a subscriber created before
	// epochs were recorded.
	TokenEpoch uint64 `json:"tokenEpoch,omitempty"`
}

// Topic is the read model of a topic. A topic created implicitly by a
// subscribe has no name and no description.
type Topic struct {
	Key             string    `json:"key"`
	Name            *string   `json:"name,omitempty"`
	Description     *string   `json:"description,omitempty"`
	SubscriberCount int       `json:"subscriberCount"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// Subscription links a subscriber to a topic.
type Subscription struct {
	SubscriberID string
	TopicKey     string
	CreatedAt    time.Time
	// Seq is the stream sequence of the SubscriberSubscribed event that
	// created the link: a writer compares it with its own append to tell
	// "I created it" from "it already existed".
	Seq uint64
}

// membership is the value of both link buckets.
type membership struct {
	CreatedAt time.Time `json:"createdAt"`
	Seq       uint64    `json:"seq"`
}

func audienceModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
			events.SubscriberUpserted:     decoded(applySubscriberUpserted),
			events.SubscriberDeleted:      decoded(applySubscriberDeleted),
			events.SubscriberErased:       decoded(applySubscriberErased),
			events.InboxTokensRevoked:     decoded(applyInboxTokensRevoked),
			events.TopicUpserted:          decoded(applyTopicUpserted),
			events.TopicDeleted:           decoded(applyTopicDeleted),
			events.SubscriberSubscribed:   decoded(applySubscriberSubscribed),
			events.SubscribersSubscribed:  decoded(applySubscribersSubscribed),
			events.SubscriberUnsubscribed: decoded(applySubscriberUnsubscribed),
		}, [][]byte{bucketSubscribers, bucketTopics, bucketTopicMembers,
			bucketSubscriberTopics}
}

// pairKey builds tenant\x00a\x00b.
func pairKey(tenant, a, b string) []byte {
	return key(tenant, a+"\x00"+b)
}

// scope is the "tenant" that makes listTenant and prefixKeys walk the
// pairs under one topic or one subscriber: tenant\x00a.
func scope(tenant, a string) string { return tenant + "\x00" + a }

// prefixKeys returns the ids stored under tenant\x00a\x00 in b, in key
// order.
func prefixKeys(b *bolt.Bucket, tenant, a string) []string {
	prefix := key(scope(tenant, a), "")
	var ids []string
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix):]))
	}
	return ids
}

func applySubscriberUpserted(tx *bolt.Tx, ev eventlog.Event, d events.SubscriberUpsertedData) error {
	b := appendBucket(tx, bucketSubscribers)
	k := key(ev.TenantID, d.SubscriberID)
	// Only the creation time and the token epoch survive an upsert; a
	// creation starts an epoch.
	cur := struct {
		CreatedAt  time.Time `json:"createdAt"`
		TokenEpoch uint64    `json:"tokenEpoch"`
	}{ev.At, ev.Seq}
	if _, err := getJSON(b, k, &cur); err != nil {
		return err
	}
	created := cur.CreatedAt
	if row, ok := subscriberRow(ev, d, created, cur.TokenEpoch); ok {
		return b.Put(k, row)
	}
	contacts := d.Contacts
	if contacts == nil {
		contacts = map[string][]string{}
	}
	return putJSON(b, k, Subscriber{SubscriberID: d.SubscriberID, Contacts: contacts, Locale: d.Locale,
		Attributes: d.Attributes, Timezone: d.Timezone, CreatedAt: created, UpdatedAt: ev.At, Seq: ev.Seq, TokenEpoch: cur.TokenEpoch})
}

// applyInboxTokensRevoked starts a new token epoch for the subscriber and
// moves its Seq. It is ignored when the subscriber does not exist (the
// writer checked it did).
func applyInboxTokensRevoked(tx *bolt.Tx, ev eventlog.Event, d events.InboxTokensRevokedData) error {
	return updateJSON(tx.Bucket(bucketSubscribers), key(ev.TenantID, d.SubscriberID), func(sub *Subscriber) {
		sub.Seq, sub.TokenEpoch = ev.Seq, ev.Seq
	})
}

// subscriberRow returns the row of the subscriber ev upserts (its data
// d) when it can be written as the event's data followed by the row's own
// fields, and reports whether it could: the data is an object that begins
// with the subscriber id, as json.Marshal writes SubscriberUpsertedData,
// whose fields the row begins with in the same order, and it has contacts.
// The row is then what json.Marshal of the Subscriber would write, without
// encoding the contacts again.
func subscriberRow(ev eventlog.Event, d events.SubscriberUpsertedData, created time.Time, epoch uint64) ([]byte, bool) {
	data := bytes.TrimRight(ev.Data, " \t\r\n")
	if d.Contacts == nil || !bytes.HasPrefix(data, []byte(`{"subscriberId":`)) || !bytes.HasSuffix(data, []byte("}")) ||
		!fourDigitYear(created) || !fourDigitYear(ev.At) {
		return nil, false
	}
	row := make([]byte, 0, len(data)+100)
	row = append(row, data[:len(data)-1]...)
	row = append(row, `,"createdAt":"`...)
	row = created.AppendFormat(row, time.RFC3339Nano)
	row = append(row, `","updatedAt":"`...)
	row = ev.At.AppendFormat(row, time.RFC3339Nano)
	row = append(row, `","seq":`...)
	row = strconv.AppendUint(row, ev.Seq, 10)
	if epoch != 0 {
		row = append(row, `,"tokenEpoch":`...)
		row = strconv.AppendUint(row, epoch, 10)
	}
	return append(row, '}'), true
}

// fourDigitYear reports whether json.Marshal can write t (its years are
// 0 to 9999).
func fourDigitYear(t time.Time) bool { return t.Year() >= 0 && t.Year() <= 9999 }

func applySubscriberDeleted(tx *bolt.Tx, ev eventlog.Event, d events.SubscriberDeletedData) error {
	subs := tx.Bucket(bucketSubscribers)
	k := key(ev.TenantID, d.SubscriberID)
	if subs.Get(k) == nil {
		return nil
	}
	for _, topic := range prefixKeys(tx.Bucket(bucketSubscriberTopics), ev.TenantID, d.SubscriberID) {
		if err := unlink(tx, ev, d.SubscriberID, topic); err != nil {
			return err
		}
	}
	if err := deletePreferences(tx, ev.TenantID, d.SubscriberID); err != nil {
		return err
	}
	return subs.Delete(k)
}

func applyTopicUpserted(tx *bolt.Tx, ev eventlog.Event, d events.TopicUpsertedData) error {
	b := tx.Bucket(bucketTopics)
	k := key(ev.TenantID, d.Key)
	t := Topic{Key: d.Key, CreatedAt: ev.At}
	if _, err := getJSON(b, k, &t); err != nil {
		return err
	}
	t.Name, t.Description, t.UpdatedAt = d.Name, d.Description, ev.At
	return putJSON(b, k, t)
}

func applyTopicDeleted(tx *bolt.Tx, ev eventlog.Event, d events.TopicDeletedData) error {
	// The writer checked the topic had no subscribers; remove any left
	// anyway, so no subscription can outlive its topic.
	for _, sub := range prefixKeys(tx.Bucket(bucketTopicMembers), ev.TenantID, d.Key) {
		if err := unlink(tx, ev, sub, d.Key); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketTopics).Delete(key(ev.TenantID, d.Key))
}

func applySubscriberSubscribed(tx *bolt.Tx, ev eventlog.Event, d events.SubscriberSubscribedData) error {
	return subscribe(tx, ev, d.TopicKey, []string{d.SubscriberID})
}

func applySubscribersSubscribed(tx *bolt.Tx, ev eventlog.Event, d events.SubscribersSubscribedData) error {
	return subscribe(tx, ev, d.TopicKey, d.SubscriberIDs)
}

// subscribe links each of ids to topic at ev, creating the topic (key
// only) when absent and some link is new. A subscribe that raced the
// subscriber's delete and lost leaves no trace; a repeated one changes
// nothing. The topic's row is read and written once, however many links.
func subscribe(tx *bolt.Tx, ev eventlog.Event, topic string, ids []string) error {
	subs := tx.Bucket(bucketSubscribers)
	members := appendBucket(tx, bucketTopicMembers)
	links := appendBucket(tx, bucketSubscriberTopics)
	// bbolt keeps a value until the commit: every link shares one.
	m, err := json.Marshal(membership{CreatedAt: ev.At, Seq: ev.Seq})
	if err != nil {
		return err
	}
	// One cursor per bucket for the lookups: a Get makes a cursor each.
	subsC, membersC := subs.Cursor(), members.Cursor()
	var sk []byte
	added := 0
	for _, id := range ids {
		sk = append(append(append(sk[:0], ev.TenantID...), 0), id...)
		if !has(subsC, sk) {
			continue
		}
		mk := pairKey(ev.TenantID, topic, id)
		if has(membersC, mk) {
			continue
		}
		if err := members.Put(mk, m); err != nil {
			return err
		}
		if err := links.Put(pairKey(ev.TenantID, id, topic), m); err != nil {
			return err
		}
		added++
	}
	if added == 0 {
		return nil
	}
	topics := tx.Bucket(bucketTopics)
	tk := key(ev.TenantID, topic)
	t := Topic{Key: topic, CreatedAt: ev.At, UpdatedAt: ev.At}
	if _, err := getJSON(topics, tk, &t); err != nil {
		return err
	}
	t.SubscriberCount += added
	return putJSON(topics, tk, t)
}

// has reports whether c's bucket holds the key k. It moves c.
func has(c *bolt.Cursor, k []byte) bool { return get(c, k) != nil }

// get returns the value of k in c's bucket, as Bucket.Get does, through
// a cursor that a loop of lookups reuses (a Get makes a cursor and its
// stack each). It moves c.
func get(c *bolt.Cursor, k []byte) []byte {
	got, v := c.Seek(k)
	if !bytes.Equal(got, k) {
		return nil
	}
	return v
}

func applySubscriberUnsubscribed(tx *bolt.Tx, ev eventlog.Event, d events.SubscriberUnsubscribedData) error {
	return unlink(tx, ev, d.SubscriberID, d.TopicKey)
}

// unlink removes one subscription, when present, and counts it off its
// topic.
func unlink(tx *bolt.Tx, ev eventlog.Event, subscriber, topic string) error {
	members := tx.Bucket(bucketTopicMembers)
	mk := pairKey(ev.TenantID, topic, subscriber)
	if members.Get(mk) == nil {
		return nil
	}
	if err := members.Delete(mk); err != nil {
		return err
	}
	if err := tx.Bucket(bucketSubscriberTopics).Delete(pairKey(ev.TenantID, subscriber, topic)); err != nil {
		return err
	}
	return updateJSON(tx.Bucket(bucketTopics), key(ev.TenantID, topic), func(t *Topic) {
		t.SubscriberCount = max(t.SubscriberCount-1, 0)
	})
}

// Subscriber returns one subscriber of a tenant, or ErrNotFound.
func (s *Store) Subscriber(tenant, externalID string) (Subscriber, error) {
	sub, err := s.subscribers.get(tenant+"\x00"+externalID, func() (sub Subscriber, err error) {
		err = s.view(func(tx *bolt.Tx) error {
			return mustGet(tx.Bucket(bucketSubscribers), key(tenant, externalID), &sub)
		})
		return sub, err
	})
	return sub.clone(), err
}

// subscriberRowEvents are the events whose handlers write a subscriber's
// row: a batch that applies one reads every subscriber kept decoded
// again (Store.subscribers). A handler that comes to write the row joins
// them.
var subscriberRowEvents = map[string]bool{
	events.SubscriberUpserted:           true,
	events.SubscriberDeleted:            true,
	events.SubscriberErased:             true,
	events.InboxTokensRevoked:           true,
	events.SubscriberPreferencesUpdated: true,
}

// clone is a copy of s that shares nothing a caller may change with s.
func (s Subscriber) clone() Subscriber {
	c := s
	if s.Contacts != nil {
		c.Contacts = make(map[string][]string, len(s.Contacts))
		for kind, addrs := range s.Contacts {
			c.Contacts[kind] = slices.Clone(addrs)
		}
	}
	c.Attributes = bytes.Clone(s.Attributes)
	if s.Locale != nil {
		l := *s.Locale
		c.Locale = &l
	}
	if s.Timezone != nil {
		tz := *s.Timezone
		c.Timezone = &tz
	}
	return c
}

// SubscribersByID reads the subscriber of each of ids in one read
// transaction: out[i] is nil when ids[i] has none.
func (s *Store) SubscribersByID(tenant string, ids []string) ([]*Subscriber, error) {
	out := make([]*Subscriber, len(ids))
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketSubscribers).Cursor()
		var k []byte
		for i, id := range ids {
			k = append(append(append(k[:0], tenant...), 0), id...)
			if v := get(c, k); v != nil {
				out[i] = new(Subscriber)
				if err := json.Unmarshal(v, out[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, err
}

// Subscribed reports, in one read transaction, whether subscriber ids[i]
// is subscribed to each of topics[i] (topics is as long as ids).
func (s *Store) Subscribed(tenant string, ids []string, topics [][]string) ([][]bool, error) {
	out := make([][]bool, len(ids))
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketTopicMembers).Cursor()
		var mk []byte
		for i, id := range ids {
			out[i] = make([]bool, len(topics[i]))
			for k, topic := range topics[i] {
				mk = append(append(append(append(append(mk[:0], tenant...), 0), topic...), 0), id...)
				out[i][k] = has(c, mk)
			}
		}
		return nil
	})
	return out, err
}

// Subscribers lists a tenant's subscribers in external id (byte) order.
func (s *Store) Subscribers(tenant string, p Page) ([]Subscriber, string, error) {
	return listJSON[Subscriber](s, bucketSubscribers, tenant, p)
}

// Topic returns one topic of a tenant, or ErrNotFound.
func (s *Store) Topic(tenant, topicKey string) (Topic, error) {
	var t Topic
	err := s.view(func(tx *bolt.Tx) error {
		return mustGet(tx.Bucket(bucketTopics), key(tenant, topicKey), &t)
	})
	return t, err
}

// Topics lists a tenant's topics in key order.
func (s *Store) Topics(tenant string, p Page) ([]Topic, string, error) {
	return listJSON[Topic](s, bucketTopics, tenant, p)
}

// Subscription returns the link between a subscriber and a topic, or
// ErrNotFound.
func (s *Store) Subscription(tenant, externalID, topicKey string) (Subscription, error) {
	var m membership
	err := s.view(func(tx *bolt.Tx) error {
		return mustGet(tx.Bucket(bucketTopicMembers), pairKey(tenant, topicKey, externalID), &m)
	})
	return Subscription{SubscriberID: externalID, TopicKey: topicKey, CreatedAt: m.CreatedAt, Seq: m.Seq}, err
}

// TopicSubscribers lists the subscriptions of one topic in external id
// order, or returns ErrNotFound when the topic does not exist.
func (s *Store) TopicSubscribers(tenant, topicKey string, p Page) ([]Subscription, string, error) {
	return s.memberships(bucketTopics, bucketTopicMembers, tenant, topicKey, p,
		func(id string) (string, string) { return id, topicKey })
}

// SubscriberTopics lists the subscriptions of one subscriber in topic key
// order, or returns ErrNotFound when the subscriber does not exist.
func (s *Store) SubscriberTopics(tenant, externalID string, p Page) ([]Subscription, string, error) {
	return s.memberships(bucketSubscribers, bucketSubscriberTopics, tenant, externalID, p,
		func(topic string) (string, string) { return externalID, topic })
}

// memberships lists the subscriptions of owner (a topic or a subscriber,
// whose rows are in the bucket owners) from index, the membership bucket
// keyed by owner then by the other side; pair names the subscriber and
// the topic of each row from its other side. ErrNotFound when owner does
// not exist.
func (s *Store) memberships(owners, index []byte, tenant, owner string, p Page,
	pair func(other string) (subscriberID, topicKey string)) (subs []Subscription, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		if tx.Bucket(owners).Get(key(tenant, owner)) == nil {
			return ErrNotFound
		}
		subs, next, err = listTenant(tx.Bucket(index), scope(tenant, owner), p,
			func(other string, v []byte) (Subscription, bool, error) {
				var m membership
				err := json.Unmarshal(v, &m)
				id, topic := pair(other)
				return Subscription{SubscriberID: id, TopicKey: topic, CreatedAt: m.CreatedAt, Seq: m.Seq}, true, err
			})
		return err
	})
	return subs, next, err
}

// ResolveTopics returns the external ids of every subscriber of the
// given topics, de-duplicated and sorted (byte order), read from one
// consistent snapshot. Unknown topics, and keys no topic can have,
// contribute no one; the result is empty, never nil.
func (s *Store) ResolveTopics(tenant string, keys []string) ([]string, error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	out := []string{}
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTopicMembers)
		for _, k := range keys {
			if k == "" || bytes.IndexByte([]byte(k), 0) >= 0 {
				continue
			}
			out = append(out, prefixKeys(b, tenant, k)...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// One topic's members come sorted and unique already.
	if len(keys) > 1 {
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out, nil
}

// CountAudience returns how many distinct subscribers the given topics
// have, without holding them: one topic is its row's count; several are
// walked together in key order, one cursor each, so a subscriber of
// several topics counts once (the fan-out runs one run for them). When
// the topics' counts add up to at most atMost, that sum is returned
// unwalked: an upper bound, enough to tell a trigger is not large.
func (s *Store) CountAudience(tenant string, keys []string, atMost int) (int, error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	n := 0
	err := s.view(func(tx *bolt.Tx) error {
		topics := tx.Bucket(bucketTopics)
		var live []string
		for _, k := range keys {
			if k == "" || bytes.IndexByte([]byte(k), 0) >= 0 {
				continue
			}
			var t Topic
			if ok, err := getJSON(topics, key(tenant, k), &t); err != nil {
				return err
			} else if ok && t.SubscriberCount > 0 {
				n += t.SubscriberCount
				live = append(live, k)
			}
		}
		if len(live) < 2 || n <= atMost {
			return nil
		}
		n = mergeCount(tx.Bucket(bucketTopicMembers), tenant, live)
		return nil
	})
	return n, err
}

// mergeCount counts the distinct subscribers of several topics.
func mergeCount(b *bolt.Bucket, tenant string, topics []string) int {
	n := 0
	audienceWalk(b, tenant, topics, "", func([]byte) bool { n++; return true })
	return n
}

// audienceWalk calls each with the distinct subscribers of topics (valid
// keys, each once) in key order from the id from on (inclusive), walking
// their member keys side by side, one cursor a topic, until each returns
// false. The id passed is valid only during the call.
func audienceWalk(b *bolt.Bucket, tenant string, topics []string, from string, each func(id []byte) bool) {
	type walk struct {
		c      *bolt.Cursor
		prefix []byte
		cur    []byte // the current subscriber id, nil when done
	}
	ws := make([]*walk, len(topics))
	next := func(w *walk, k []byte) {
		if k != nil && bytes.HasPrefix(k, w.prefix) {
			w.cur = k[len(w.prefix):]
		} else {
			w.cur = nil
		}
	}
	for i, t := range topics {
		w := &walk{c: b.Cursor(), prefix: key(scope(tenant, t), "")}
		k, _ := w.c.Seek(append(slices.Clone(w.prefix), from...))
		next(w, k)
		ws[i] = w
	}
	for {
		var least []byte
		for _, w := range ws {
			if w.cur != nil && (least == nil || bytes.Compare(w.cur, least) < 0) {
				least = w.cur
			}
		}
		if least == nil || !each(least) {
			return
		}
		least = slices.Clone(least)
		for _, w := range ws {
			if w.cur != nil && bytes.Equal(w.cur, least) {
				k, _ := w.c.Next()
				next(w, k)
			}
		}
	}
}

// AudiencePage returns up to limit distinct subscribers of the given
// topics in key order from the id from on (inclusive; "" from the
// first), read from one snapshot: a fan-out walks a large audience a page
// at a time instead of holding it. Unknown topics, and keys no topic can
// have, contribute no one. From the successor of an id (the id followed
// by a zero byte, which no id holds), the page starts after it.
func (s *Store) AudiencePage(tenant string, keys []string, from string, limit int) ([]string, error) {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "" || bytes.IndexByte([]byte(k), 0) >= 0 })
	out := make([]string, 0, min(limit, 1024))
	err := s.view(func(tx *bolt.Tx) error {
		audienceWalk(tx.Bucket(bucketTopicMembers), tenant, keys, from, func(id []byte) bool {
			out = append(out, string(id))
			return len(out) < limit
		})
		return nil
	})
	return out, err
}

// mustGet reads k's JSON value into v, or returns ErrNotFound.
func mustGet(b *bolt.Bucket, k []byte, v any) error {
	ok, err := getJSON(b, k, v)
	if err == nil && !ok {
		return ErrNotFound
	}
	return err
}

func decodeJSON[T any](_ string, v []byte) (T, bool, error) {
	var t T
	err := json.Unmarshal(v, &t)
	return t, true, err
}
