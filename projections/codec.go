package projections

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// key builds a tenant-scoped key: tenant, a zero byte, then id. Ids
// never contain a zero byte (they are validated printable text).
func key(tenant, id string) []byte {
	k := make([]byte, 0, len(tenant)+1+len(id))
	k = append(k, tenant...)
	k = append(k, 0)
	return append(k, id...)
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, data)
}

func getJSON(b *bolt.Bucket, k []byte, v any) (bool, error) {
	data := b.Get(k)
	if data == nil {
		return false, nil
	}
	return true, json.Unmarshal(data, v)
}

// updateJSON changes the JSON value at k of b, if there is one.
func updateJSON[T any](b *bolt.Bucket, k []byte, change func(*T)) error {
	var v T
	if ok, err := getJSON(b, k, &v); err != nil || !ok {
		return err
	}
	change(&v)
	return putJSON(b, k, v)
}

// getOne reads the JSON value at k of bucket, or returns ErrNotFound.
func getOne[T any](s *Store, bucket, k []byte) (T, error) {
	var v T
	err := s.view(func(tx *bolt.Tx) error { return mustGet(tx.Bucket(bucket), k, &v) })
	return v, err
}

// listJSON lists a page of tenant's JSON values of bucket, in key order.
func listJSON[T any](s *Store, bucket []byte, tenant string, p Page) (rows []T, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		rows, next, err = listTenant(tx.Bucket(bucket), tenant, p, decodeJSON[T])
		return err
	})
	return rows, next, err
}

// appendFill is the fill of the pages of buckets whose keys mostly grow.
const appendFill = 0.9

// receivedFill is the fill of the ingress rows' pages when they are
// written received (see applyNotificationsReceived).
const receivedFill = 0.7

// appendBucket returns a bucket of tx for writing rows whose keys mostly
// grow (stream sequences, time-ordered ids, the sorted subscribers of one
// fan-out or of a bulk import): its pages split at 90% full instead of
// bbolt's 50%, since a page left half full by an append is never filled
// again. The file, the pages a commit writes and the pages a walk over the
// rows maps (a fan-out reads every recipient's row) shrink by almost half.
func appendBucket(tx *bolt.Tx, name []byte) *bolt.Bucket {
	b := tx.Bucket(name)
	b.FillPercent = appendFill
	return b
}
