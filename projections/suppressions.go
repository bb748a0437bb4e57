package projections

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// bucketSuppressions: tenant\x00kind\x00address → Suppression, and
// tenant\x00kind\x00\xff<digest> → the Suppression of an erased address.
// Addresses are normalised UTF-8 with no control character: no zero byte,
// and no 0xff, so erased rows list after the others of their kind.
var bucketSuppressions = []byte("suppressions")

// Suppression is the read model of one suppressed address of a channel
// kind.
type Suppression struct {
	Kind    string `json:"kind"`
	Address string `json:"address"`
	Reason  string `json:"reason"`
	// CreatedAt is the time of the event that suppressed the address; a
	// later SuppressionAdded (a new reason) keeps it, a removal and a new
	// add start afresh.
	CreatedAt time.Time `json:"createdAt"`
	// Seq is the stream sequence of the last SuppressionAdded applied: a
	// writer compares it with its own append to tell whether its event
	// created or changed the row.
	Seq uint64 `json:"seq"`
	// Created is the stream sequence of the event that created the row.
	Created uint64 `json:"created"`
	// Erased: the address belonged to an erased subscriber and is
	// forgotten (Address is empty); the suppression matches by digest.
	Erased bool `json:"erased,omitempty"`
}

func suppressionModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.SuppressionAdded:   decoded(applySuppressionAdded),
		events.SuppressionRemoved: decoded(applySuppressionRemoved),
		events.SuppressionErased:  decoded(applySuppressionErased),
	}, [][]byte{bucketSuppressions}
}

func suppressionKey(tenant, kind, address string) []byte {
	return key(tenant, kind+"\x00"+address)
}

// erasedSuppressionKey is the key of the row of an erased address.
func erasedSuppressionKey(tenant, kind, digest string) []byte {
	return key(tenant, kind+"\x00\xff"+digest)
}

func applySuppressionAdded(tx *bolt.Tx, ev eventlog.Event, d events.SuppressionAddedData) error {
	b := tx.Bucket(bucketSuppressions)
	k := suppressionKey(ev.TenantID, d.Kind, d.Address)
	var row Suppression
	ok, err := getJSON(b, k, &row)
	if err != nil {
		return err
	}
	if !ok {
		row = Suppression{Kind: d.Kind, Address: d.Address, CreatedAt: ev.At, Created: ev.Seq}
		// The address named again after an erasure: one row, which keeps
		// the suppression's age.
		ek := erasedSuppressionKey(ev.TenantID, d.Kind, events.SuppressionDigest(d.Address))
		var erased Suppression
		if found, err := getJSON(b, ek, &erased); err != nil {
			return err
		} else if found {
			row.CreatedAt, row.Created = erased.CreatedAt, erased.Created
			if err := b.Delete(ek); err != nil {
				return err
			}
		}
	}
	row.Reason = d.Reason
	row.Seq = ev.Seq
	return putJSON(b, k, row)
}

func applySuppressionRemoved(tx *bolt.Tx, ev eventlog.Event, d events.SuppressionRemovedData) error {
	b := tx.Bucket(bucketSuppressions)
	if err := b.Delete(erasedSuppressionKey(ev.TenantID, d.Kind, events.SuppressionDigest(d.Address))); err != nil {
		return err
	}
	return b.Delete(suppressionKey(ev.TenantID, d.Kind, d.Address))
}

// applySuppressionErased replaces the row of the address by a row without
// it. The address row is found by digest among the kind's rows (an erase
// is rare); after a rebuild, which no longer sees the earlier events, the
// event alone makes the row.
func applySuppressionErased(tx *bolt.Tx, ev eventlog.Event, d events.SuppressionErasedData) error {
	b := tx.Bucket(bucketSuppressions)
	prefix := key(ev.TenantID, d.Kind+"\x00")
	var stale []byte
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var row Suppression
		if err := json.Unmarshal(v, &row); err != nil {
			return err
		}
		if !row.Erased && events.SuppressionDigest(row.Address) == d.Digest {
			stale = append([]byte{}, k...)
			break
		}
	}
	if stale != nil {
		if err := b.Delete(stale); err != nil {
			return err
		}
	}
	return putJSON(b, erasedSuppressionKey(ev.TenantID, d.Kind, d.Digest), Suppression{
		Kind: d.Kind, Reason: d.Reason, CreatedAt: d.CreatedAt, Seq: ev.Seq, Created: ev.Seq, Erased: true})
}

// Suppression returns the suppression of a tenant's normalised address of
// kind, or ErrNotFound. The suppression of an erased address is found by
// the address too, and has Erased set and no Address.
func (s *Store) Suppression(tenant, kind, address string) (Suppression, error) {
	var row Suppression
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSuppressions)
		ok, err := getJSON(b, suppressionKey(tenant, kind, address), &row)
		if err == nil && !ok {
			ok, err = getJSON(b, erasedSuppressionKey(tenant, kind, events.SuppressionDigest(address)), &row)
		}
		if err == nil && !ok {
			return ErrNotFound
		}
		return err
	})
	return row, err
}

// Suppressions lists a tenant's suppressions in (kind, address) order,
// only those of kind when it is not empty.
func (s *Store) Suppressions(tenant, kind string, p Page) ([]Suppression, string, error) {
	prefix := key(tenant, "")
	if kind != "" {
		prefix = key(tenant, kind+"\x00")
	}
	var (
		out  []Suppression
		next string
	)
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, next, err = listPrefix(tx.Bucket(bucketSuppressions), prefix, p,
			func(_ string, v []byte) (Suppression, bool, error) {
				var row Suppression
				return row, true, json.Unmarshal(v, &row)
			})
		return err
	})
	return out, next, err
}
