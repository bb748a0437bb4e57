package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Checksum returns a SHA-256 over every read model's keys and values (the
// checkpoint excluded): two stores that applied the same events have the
// same checksum.
func (s *Store) Checksum() (string, error) { return s.checksum(nil) }

// checksum is Checksum without the buckets of skip.
func (s *Store) checksum(skip map[string]bool) (string, error) {
	h := sha256.New()
	err := s.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if bytes.Equal(name, bucketMeta) || skip[string(name)] {
				return nil
			}
			fmt.Fprintf(h, "bucket %q\n", name)
			return hashBucket(h, b)
		})
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashBucket(h interface{ Write([]byte) (int, error) }, b *bolt.Bucket) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			fmt.Fprintf(h, "sub %q\n", k)
			return hashBucket(h, b.Bucket(k))
		}
		fmt.Fprintf(h, "%q=%q\n", k, v)
		return nil
	})
}
