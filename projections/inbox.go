package projections

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// The inbox read model, three buckets per subscriber:
//
//   - inbox: tenant\x00subscriberId\x00<seq> → InAppMessage, seq being the
//     stream sequence of its InAppMessageStored as 16 hex digits: a
//     subscriber's messages in the order they were stored.
//   - inbox_ids: tenant\x00subscriberId\x00messageId → <seq>: a message by
//     its id, within its own subscriber's inbox only.
//   - inbox_counts: tenant\x00subscriberId → InboxCounts, kept by every
//     event that changes them, never counted per read.
var (
	bucketInbox       = []byte("inbox")
	bucketInboxIDs    = []byte("inbox_ids")
	bucketInboxCounts = []byte("inbox_counts")
)

// MaxInboxMessages bounds a subscriber's inbox: storing a message beyond
// it drops the oldest one (read or not) from the read model. The log
// keeps the dropped messages until an erasure; a rebuild drops the same
// ones. It also bounds every scan of one inbox (a filtered list, a
// read-all).
const MaxInboxMessages = 1000

// InAppMessage is the read model of one in-app message in a subscriber's
// inbox. SeenAt, ReadAt and ArchivedAt are nil while the message is not
// in that state; a read message is always seen.
type InAppMessage struct {
	// The message as its InAppMessageStored stored it.
	events.InAppMessageStoredData
	CreatedAt time.Time `json:"createdAt"`
	// Seq is the stream sequence of the message's InAppMessageStored.
	Seq        uint64     `json:"seq"`
	SeenAt     *time.Time `json:"seenAt,omitempty"`
	ReadAt     *time.Time `json:"readAt,omitempty"`
	ArchivedAt *time.Time `json:"archivedAt,omitempty"`
}

// InboxCounts are the counts of one inbox. Archived messages count in
// neither Unread nor Unseen; Total counts every message held.
type InboxCounts struct {
	Unread int `json:"unread"`
	Unseen int `json:"unseen"`
	Total  int `json:"total"`
}

// InboxFilter selects the messages of an inbox list.
type InboxFilter string

// Filters of an inbox list. All, Unread and Read leave archived messages
// out; Archived lists only them.
const (
	InboxAll      InboxFilter = "all"
	InboxUnread   InboxFilter = "unread"
	InboxRead     InboxFilter = "read"
	InboxArchived InboxFilter = "archived"
)

// Matches reports whether m is listed under f.
func (f InboxFilter) Matches(m InAppMessage) bool {
	switch f {
	case InboxAll:
		return m.ArchivedAt == nil
	case InboxUnread:
		return m.ArchivedAt == nil && m.ReadAt == nil
	case InboxRead:
		return m.ArchivedAt == nil && m.ReadAt != nil
	case InboxArchived:
		return m.ArchivedAt != nil
	}
	return false
}

func inboxModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
			events.InAppMessageStored:  decoded(applyInAppMessageStored),
			events.InboxMessagesMarked: decoded(applyInboxMessagesMarked),
		},
		[][]byte{bucketInbox, bucketInboxIDs, bucketInboxCounts}
}

// inboxPrefix is the key prefix of one subscriber's rows in inbox and
// inbox_ids.
func inboxPrefix(tenant, subscriberID string) []byte {
	return key(tenant, subscriberID+"\x00")
}

// counted is what m adds to its inbox's counts.
func counted(m InAppMessage) InboxCounts {
	c := InboxCounts{Total: 1}
	if m.ArchivedAt == nil {
		if m.ReadAt == nil {
			c.Unread = 1
		}
		if m.SeenAt == nil {
			c.Unseen = 1
		}
	}
	return c
}

func (c *InboxCounts) add(d InboxCounts, sign int) {
	c.Unread += sign * d.Unread
	c.Unseen += sign * d.Unseen
	c.Total += sign * d.Total
}

func applyInAppMessageStored(tx *bolt.Tx, ev eventlog.Event, d events.InAppMessageStoredData) error {
	prefix := inboxPrefix(ev.TenantID, d.SubscriberID)
	ids := tx.Bucket(bucketInboxIDs)
	idKey := append(bytes.Clone(prefix), d.MessageID...)
	if ids.Get(idKey) != nil {
		return nil // a repeat of a stored message (outside the dedupe window)
	}
	m := InAppMessage{InAppMessageStoredData: d, CreatedAt: ev.At, Seq: ev.Seq}
	msgs := appendBucket(tx, bucketInbox)
	seq := seqID(ev.Seq)
	if err := putJSON(msgs, append(bytes.Clone(prefix), seq...), m); err != nil {
		return err
	}
	if err := ids.Put(idKey, []byte(seq)); err != nil {
		return err
	}
	countsKey := key(ev.TenantID, d.SubscriberID)
	var counts InboxCounts
	if _, err := getJSON(tx.Bucket(bucketInboxCounts), countsKey, &counts); err != nil {
		return err
	}
	counts.add(counted(m), 1)
	for counts.Total > MaxInboxMessages {
		k, v := msgs.Cursor().Seek(prefix)
		if k == nil || !bytes.HasPrefix(k, prefix) {
			break
		}
		var old InAppMessage
		if err := json.Unmarshal(v, &old); err != nil {
			return err
		}
		if err := msgs.Delete(bytes.Clone(k)); err != nil {
			return err
		}
		if err := ids.Delete(append(bytes.Clone(prefix), old.MessageID...)); err != nil {
			return err
		}
		counts.add(counted(old), -1)
	}
	return putJSON(tx.Bucket(bucketInboxCounts), countsKey, counts)
}

// mark applies one mark to m at instant at and reports whether it changed
// m. A read also marks the message seen.
func mark(m *InAppMessage, kind string, at time.Time) bool {
	switch kind {
	case events.MarkSeen:
		if m.SeenAt == nil {
			m.SeenAt = &at
			return true
		}
	case events.MarkRead:
		if m.ReadAt == nil {
			m.ReadAt = &at
			if m.SeenAt == nil {
				m.SeenAt = &at
			}
			return true
		}
	case events.MarkUnread:
		if m.ReadAt != nil {
			m.ReadAt = nil
			return true
		}
	case events.MarkArchived:
		if m.ArchivedAt == nil {
			m.ArchivedAt = &at
			return true
		}
	case events.MarkUnarchived:
		if m.ArchivedAt != nil {
			m.ArchivedAt = nil
			return true
		}
	}
	return false
}

// MarkChanges reports whether a mark of kind would change m: the messages
// an InboxMessagesMarked lists are those it changes.
func MarkChanges(m InAppMessage, kind string) bool { return mark(&m, kind, time.Time{}) }

func applyInboxMessagesMarked(tx *bolt.Tx, ev eventlog.Event, d events.InboxMessagesMarkedData) error {
	prefix := inboxPrefix(ev.TenantID, d.SubscriberID)
	msgs := appendBucket(tx, bucketInbox)
	ids := tx.Bucket(bucketInboxIDs)
	countsKey := key(ev.TenantID, d.SubscriberID)
	var counts InboxCounts
	if _, err := getJSON(tx.Bucket(bucketInboxCounts), countsKey, &counts); err != nil {
		return err
	}
	for _, id := range d.MessageIDs {
		seq := ids.Get(append(bytes.Clone(prefix), id...))
		if seq == nil {
			continue // dropped from a full inbox, or never stored
		}
		k := append(bytes.Clone(prefix), seq...)
		var m InAppMessage
		if ok, err := getJSON(msgs, k, &m); err != nil || !ok {
			return err
		}
		before := counted(m)
		if !mark(&m, d.Mark, ev.At) {
			continue
		}
		counts.add(before, -1)
		counts.add(counted(m), 1)
		if err := putJSON(msgs, k, m); err != nil {
			return err
		}
	}
	return putJSON(tx.Bucket(bucketInboxCounts), countsKey, counts)
}

// eraseInbox deletes every message of a subscriber's inbox and its counts.
func eraseInbox(tx *bolt.Tx, tenant, subscriberID string) error {
	prefix := inboxPrefix(tenant, subscriberID)
	if err := deletePrefix(appendBucket(tx, bucketInbox), prefix); err != nil {
		return err
	}
	if err := deletePrefix(tx.Bucket(bucketInboxIDs), prefix); err != nil {
		return err
	}
	return tx.Bucket(bucketInboxCounts).Delete(key(tenant, subscriberID))
}

// deletePrefix deletes every key of b that starts with prefix.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// InboxMessages lists a subscriber's messages under filter, newest first,
// one page at a time (the cursor is the last message's position).
// Errors: ErrBadCursor.
func (s *Store) InboxMessages(tenant, subscriberID string, filter InboxFilter, p Page) (out []InAppMessage, next string, err error) {
	prefix := inboxPrefix(tenant, subscriberID)
	// upper is the exclusive bound of the walk: past every key of the
	// subscriber (its prefix ends in \x00), or the cursor's key.
	upper := append(bytes.Clone(prefix[:len(prefix)-1]), 1)
	if p.Cursor != "" {
		after, derr := base64.RawURLEncoding.DecodeString(p.Cursor)
		if derr != nil || len(after) != 16 {
			return nil, "", ErrBadCursor
		}
		upper = append(bytes.Clone(prefix), after...)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	err = s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketInbox).Cursor()
		k, v := c.Seek(upper)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			var m InAppMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			if !filter.Matches(m) {
				continue
			}
			if len(out) == limit {
				next = base64.RawURLEncoding.EncodeToString(last)
				return nil
			}
			out = append(out, m)
			last = bytes.Clone(k[len(prefix):])
		}
		return nil
	})
	return out, next, err
}

// InboxMessage returns one message of a subscriber's inbox, or
// ErrNotFound (another subscriber's message included).
func (s *Store) InboxMessage(tenant, subscriberID, messageID string) (InAppMessage, error) {
	var m InAppMessage
	err := s.view(func(tx *bolt.Tx) error {
		prefix := inboxPrefix(tenant, subscriberID)
		seq := tx.Bucket(bucketInboxIDs).Get(append(bytes.Clone(prefix), messageID...))
		if seq == nil {
			return fmt.Errorf("%w: message %q", ErrNotFound, messageID)
		}
		return mustGet(tx.Bucket(bucketInbox), append(bytes.Clone(prefix), seq...), &m)
	})
	return m, err
}

// InboxCounts returns the counts of a subscriber's inbox (zero when it
// holds nothing).
func (s *Store) InboxCounts(tenant, subscriberID string) (InboxCounts, error) {
	var c InboxCounts
	err := s.view(func(tx *bolt.Tx) error {
		_, err := getJSON(tx.Bucket(bucketInboxCounts), key(tenant, subscriberID), &c)
		return err
	})
	return c, err
}

// InboxMessagesBetween returns the messages of a subscriber's inbox stored
// at stream sequences in (after, upTo], oldest first: what a stream
// client that saw sequence after has missed up to upTo. At most
// MaxInboxMessages.
func (s *Store) InboxMessagesBetween(tenant, subscriberID string, after, upTo uint64) ([]InAppMessage, error) {
	var out []InAppMessage
	err := s.view(func(tx *bolt.Tx) error {
		prefix := inboxPrefix(tenant, subscriberID)
		c := tx.Bucket(bucketInbox).Cursor()
		end := append(bytes.Clone(prefix), seqID(upTo)...)
		for k, v := c.Seek(append(bytes.Clone(prefix), seqID(after+1)...)); k != nil && bytes.HasPrefix(k, prefix) &&
			bytes.Compare(k, end) <= 0; k, v = c.Next() {
			var m InAppMessage
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}
