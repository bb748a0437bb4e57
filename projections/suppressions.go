package projections

import (
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// bucketSuppressions: tenant\x00kind\x00address → Suppression. Addresses
// are normalised and hold no control character, so no zero byte.
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
}

func suppressionModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.SuppressionAdded:   applySuppressionAdded,
		events.SuppressionRemoved: applySuppressionRemoved,
	}, [][]byte{bucketSuppressions}
}

func suppressionKey(tenant, kind, address string) []byte {
	return key(tenant, kind+"\x00"+address)
}

func applySuppressionAdded(tx *bolt.Tx, ev eventlog.Event) error {
	var d events.SuppressionAddedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	b := tx.Bucket(bucketSuppressions)
	k := suppressionKey(ev.TenantID, d.Kind, d.Address)
	var row Suppression
	ok, err := getJSON(b, k, &row)
	if err != nil {
		return err
	}
	if !ok {
		row = Suppression{Kind: d.Kind, Address: d.Address, CreatedAt: ev.At, Created: ev.Seq}
	}
	row.Reason = d.Reason
	row.Seq = ev.Seq
	return putJSON(b, k, row)
}

func applySuppressionRemoved(tx *bolt.Tx, ev eventlog.Event) error {
	var d events.SuppressionRemovedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	return tx.Bucket(bucketSuppressions).Delete(suppressionKey(ev.TenantID, d.Kind, d.Address))
}

// Suppression returns the suppression of a tenant's normalised address of
// kind, or ErrNotFound.
func (s *Store) Suppression(tenant, kind, address string) (Suppression, error) {
	var row Suppression
	err := s.view(func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketSuppressions), suppressionKey(tenant, kind, address), &row)
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
