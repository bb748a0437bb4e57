package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

var (
	// webhooks: tenant\x00webhookId → Webhook.
	bucketWebhooks = []byte("webhooks")
	// webhook_attempts: tenant\x00webhookId\x00<seq> → WebhookAttempt, seq
	// being the stream sequence of its WebhookAttempted as 16 hex digits:
	// an endpoint's attempts oldest first, at most MaxWebhookAttempts.
	bucketWebhookAttempts = []byte("webhook_attempts")
	// webhook_attempt_counts: tenant\x00webhookId → the number of its
	// attempts kept (8 bytes, big endian).
	bucketWebhookAttemptCounts = []byte("webhook_attempt_counts")
	// webhook_undelivered: tenant\x00webhookId\x00messageId → the instant
	// of the message's event (RFC 3339): messages that failed an attempt
	// and will be tried again.
	bucketWebhookUndelivered = []byte("webhook_undelivered")
)

// MaxWebhookAttempts bounds the attempts kept per endpoint: applying an
// attempt beyond it drops the endpoint's oldest.
const MaxWebhookAttempts = 1000

// Webhook is the read model of one outbound webhook endpoint. Its secrets
// are kept sealed; nothing here opens them.
type Webhook struct {
	WebhookID   string   `json:"webhookId"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description,omitempty"`
	Enabled     bool     `json:"enabled"`
	// SealedSecret is the current signing secret, sealed with
	// events.WebhookSecretAAD.
	SealedSecret string `json:"sealedSecret"`
	// PreviousSealed is the secret the last rotation replaced, which keeps
	// signing until PreviousUntil; empty before any rotation.
	PreviousSealed string    `json:"previousSealed,omitempty"`
	PreviousUntil  time.Time `json:"previousUntil,omitzero"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// Seq is the stream sequence of the creating event: the endpoint is
	// sent the events stored after it.
	Seq uint64 `json:"seq"`
}

// Subscribed reports whether the endpoint takes events of type typ.
func (w Webhook) Subscribed(typ string) bool {
	for _, e := range w.Events {
		if e == "*" || e == typ {
			return true
		}
	}
	return false
}

// WebhookAttempt is the read model of one attempt to deliver a webhook
// message.
type WebhookAttempt struct {
	WebhookID  string    `json:"webhookId"`
	MessageID  string    `json:"messageId"`
	Type       string    `json:"type"`
	Status     string    `json:"status"`
	HTTPStatus int       `json:"httpStatus"`
	Attempt    int       `json:"attempt"`
	CreatedAt  time.Time `json:"createdAt"`
	// EventSeq is the stream sequence of the event the message tells of
	// (zero in attempts recorded before it was kept).
	EventSeq uint64 `json:"eventSeq,omitempty"`
}

// WebhookBacklog is the oldest undelivered message of one endpoint.
type WebhookBacklog struct {
	TenantID  string
	WebhookID string
	// Oldest is the instant of the event of the endpoint's oldest message
	// that failed an attempt and will be tried again.
	Oldest time.Time
}

func webhookModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
			events.WebhookCreated:       decoded(applyWebhookCreated),
			events.WebhookUpdated:       decoded(applyWebhookUpdated),
			events.WebhookDeleted:       decoded(applyWebhookDeleted),
			events.WebhookSecretRotated: decoded(applyWebhookSecretRotated),
			events.WebhookAttempted:     decoded(applyWebhookAttempted),
		}, [][]byte{bucketWebhooks, bucketWebhookAttempts, bucketWebhookAttemptCounts,
			bucketWebhookUndelivered}
}

func applyWebhookCreated(tx *bolt.Tx, ev eventlog.Event, d events.WebhookCreatedData) error {
	return putJSON(tx.Bucket(bucketWebhooks), key(ev.TenantID, d.WebhookID), Webhook{
		WebhookID: d.WebhookID, URL: d.URL, Events: d.Events, Description: d.Description, Enabled: true,
		SealedSecret: d.SealedSecret, CreatedAt: ev.At, UpdatedAt: ev.At, Seq: ev.Seq,
	})
}

// changeWebhook changes the endpoint id of tenant, if it exists.
func changeWebhook(tx *bolt.Tx, tenant, id string, change func(*Webhook)) error {
	return updateJSON(tx.Bucket(bucketWebhooks), key(tenant, id), change)
}

func applyWebhookUpdated(tx *bolt.Tx, ev eventlog.Event, d events.WebhookUpdatedData) error {
	return changeWebhook(tx, ev.TenantID, d.WebhookID, func(w *Webhook) {
		if d.URL != nil {
			w.URL = *d.URL
		}
		if d.Events != nil {
			w.Events = *d.Events
		}
		if d.Enabled != nil {
			w.Enabled = *d.Enabled
		}
		if d.Description != nil {
			w.Description = *d.Description
		}
		w.UpdatedAt = ev.At
	})
}

func applyWebhookSecretRotated(tx *bolt.Tx, ev eventlog.Event, d events.WebhookSecretRotatedData) error {
	return changeWebhook(tx, ev.TenantID, d.WebhookID, func(w *Webhook) {
		w.SealedSecret, w.PreviousSealed, w.PreviousUntil = d.SealedSecret, d.PreviousSealed, d.PreviousUntil
		w.UpdatedAt = ev.At
	})
}

// applyWebhookDeleted deletes the endpoint with its attempts and backlog.
func applyWebhookDeleted(tx *bolt.Tx, ev eventlog.Event, d events.WebhookDeletedData) error {
	if err := tx.Bucket(bucketWebhooks).Delete(key(ev.TenantID, d.WebhookID)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketWebhookAttemptCounts).Delete(key(ev.TenantID, d.WebhookID)); err != nil {
		return err
	}
	prefix := key(ev.TenantID, d.WebhookID+"\x00")
	if err := deletePrefix(tx.Bucket(bucketWebhookAttempts), prefix); err != nil {
		return err
	}
	return deletePrefix(tx.Bucket(bucketWebhookUndelivered), prefix)
}

// applyWebhookAttempted adds the attempt, drops the endpoint's oldest
// beyond MaxWebhookAttempts, and keeps the endpoint's backlog: a failed
// attempt that is not final adds its message, any other removes it. An
// attempt of a deleted endpoint is not kept.
func applyWebhookAttempted(tx *bolt.Tx, ev eventlog.Event, d events.WebhookAttemptedData) error {
	if tx.Bucket(bucketWebhooks).Get(key(ev.TenantID, d.WebhookID)) == nil {
		return nil
	}
	prefix := key(ev.TenantID, d.WebhookID+"\x00")
	attempts := appendBucket(tx, bucketWebhookAttempts)
	if err := putJSON(attempts, append(bytes.Clone(prefix), seqID(ev.Seq)...), WebhookAttempt{
		WebhookID: d.WebhookID, MessageID: d.MessageID, Type: d.Type, Status: d.Status,
		HTTPStatus: d.HTTPStatus, Attempt: d.Attempt, CreatedAt: ev.At, EventSeq: d.EventSeq,
	}); err != nil {
		return err
	}
	counts := tx.Bucket(bucketWebhookAttemptCounts)
	ck := key(ev.TenantID, d.WebhookID)
	n := uint64(0)
	if v := counts.Get(ck); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n++
	for ; n > MaxWebhookAttempts; n-- {
		k, _ := attempts.Cursor().Seek(prefix)
		if k == nil || !bytes.HasPrefix(k, prefix) {
			break
		}
		if err := attempts.Delete(bytes.Clone(k)); err != nil {
			return err
		}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	if err := counts.Put(ck, b[:]); err != nil {
		return err
	}
	undelivered := tx.Bucket(bucketWebhookUndelivered)
	uk := key(ev.TenantID, d.WebhookID+"\x00"+d.MessageID)
	if d.Status == events.WebhookFailed && !d.Final {
		if undelivered.Get(uk) != nil {
			return nil
		}
		at, err := d.EventAt.MarshalText()
		if err != nil {
			return err
		}
		return undelivered.Put(uk, at)
	}
	return undelivered.Delete(uk)
}

// Webhook returns one endpoint of the tenant, or ErrNotFound.
func (s *Store) Webhook(tenant, id string) (Webhook, error) {
	return getOne[Webhook](s, bucketWebhooks, key(tenant, id))
}

// Webhooks returns a page of the tenant's endpoints in id order.
func (s *Store) Webhooks(tenant string, p Page) ([]Webhook, string, error) {
	return listJSON[Webhook](s, bucketWebhooks, tenant, p)
}

// WebhookCount returns how many endpoints the tenant has.
func (s *Store) WebhookCount(tenant string) (n int, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		prefix := key(tenant, "")
		c := tx.Bucket(bucketWebhooks).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}

// WebhookAttempts returns a page of an endpoint's attempts, oldest first
// (newest first when desc); the last MaxWebhookAttempts are kept.
func (s *Store) WebhookAttempts(tenant, id string, p Page, desc bool) (rows []WebhookAttempt, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		rows, next, err = scanPrefix(tx.Bucket(bucketWebhookAttempts), key(tenant, id+"\x00"), p, scan{Desc: desc},
			func(_ string, v []byte) (WebhookAttempt, bool, error) {
				var a WebhookAttempt
				return a, true, json.Unmarshal(v, &a)
			})
		return err
	})
	return rows, next, err
}

// WebhookMessage returns the last attempt of message messageID to the
// endpoint id, newest first among the attempts the endpoint keeps, or
// ErrNotFound.
func (s *Store) WebhookMessage(tenant, id, messageID string) (WebhookAttempt, error) {
	var found WebhookAttempt
	err := s.view(func(tx *bolt.Tx) error {
		rows, _, err := scanPrefix(tx.Bucket(bucketWebhookAttempts), key(tenant, id+"\x00"), Page{Limit: 1}, scan{Desc: true},
			func(_ string, v []byte) (WebhookAttempt, bool, error) {
				var a WebhookAttempt
				err := json.Unmarshal(v, &a)
				return a, err == nil && a.MessageID == messageID, err
			})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return ErrNotFound
		}
		found = rows[0]
		return nil
	})
	return found, err
}

// WebhookBacklogs returns, for every endpoint with undelivered messages,
// its oldest: one walk of the backlog bucket.
func (s *Store) WebhookBacklogs() ([]WebhookBacklog, error) {
	var out []WebhookBacklog
	err := s.view(func(tx *bolt.Tx) error {
		idx := map[[2]string]int{}
		return tx.Bucket(bucketWebhookUndelivered).ForEach(func(k, v []byte) error {
			parts := bytes.SplitN(k, []byte{0}, 3)
			if len(parts) != 3 {
				return nil
			}
			var at time.Time
			if err := at.UnmarshalText(v); err != nil {
				return nil
			}
			id := [2]string{string(parts[0]), string(parts[1])}
			i, ok := idx[id]
			if !ok {
				idx[id] = len(out)
				out = append(out, WebhookBacklog{TenantID: id[0], WebhookID: id[1], Oldest: at})
				return nil
			}
			if at.Before(out[i].Oldest) {
				out[i].Oldest = at
			}
			return nil
		})
	})
	return out, err
}

// DeliveryByAttempt returns the delivery row of one attempt, or
// ErrNotFound.
func (s *Store) DeliveryByAttempt(tenant, attemptID string) (Delivery, error) {
	var row Delivery
	err := s.view(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketDeliveryAttempts).Get(key(tenant, attemptID))
		if id == nil {
			return ErrNotFound
		}
		ok, err := getDelivery(tx.Bucket(bucketDeliveries), key(tenant, string(id)), &row)
		if err == nil && !ok {
			err = ErrNotFound
		}
		return err
	})
	return row, err
}

// WebhookTenants returns every tenant that has an endpoint, with the
// stream sequence of its oldest endpoint's creation: the events a tenant's
// endpoints may be sent are those stored after it.
func (s *Store) WebhookTenants() (map[string]uint64, error) {
	out := map[string]uint64{}
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketWebhooks).ForEach(func(k, v []byte) error {
			tenant, _, ok := bytes.Cut(k, []byte{0})
			if !ok {
				return nil
			}
			var w struct {
				Seq uint64 `json:"seq"`
			}
			if err := json.Unmarshal(v, &w); err != nil {
				return err
			}
			if seq, ok := out[string(tenant)]; !ok || w.Seq < seq {
				out[string(tenant)] = w.Seq
			}
			return nil
		})
	})
	return out, err
}

// EndpointsGeneration changes after each applied batch that created or
// deleted a webhook endpoint, once it is committed: a reader of
// WebhookTenants polls it to learn of a change at once.
func (s *Store) EndpointsGeneration() uint64 { return s.endpointsGen.Load() }
