package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// OnceBucket is the key-value bucket of the one-use values (a provider's
// signed token) seen within their window.
const OnceBucket = "herald_once"

// OnceMaxBytes bounds the bucket: past it a new use is refused (an
// error, which the provider's retry meets again once older uses expire),
// never forgotten early.
const OnceMaxBytes = 64 << 20

// ErrUsed: a one-use key was used before with another value.
var ErrUsed = errors.New("eventlog: the key was used before with another value")

// Once records the use of one-use keys on the NATS server, so that every
// process of a cluster, and a process after a restart, sees a use any of
// them recorded. A use is kept for the bucket's TTL (the window in which
// the key could be presented again) and then expires: the memory held is
// the uses of one TTL, at most OnceMaxBytes.
type Once struct {
	kv jetstream.KeyValue
}

// Once creates (or finds) the bucket of one-use keys, each kept for ttl
// (at least 1 s).
func (l *Log) Once(ctx context.Context, ttl time.Duration) (*Once, error) {
	ttl = max(ttl, time.Second)
	var kv jetstream.KeyValue
	err := l.retrying(ctx, func(ctx context.Context) (err error) {
		// A bucket as wanted is left alone (see ensureStream).
		kv, err = l.js.KeyValue(ctx, OnceBucket)
		if err == nil {
			var st jetstream.KeyValueStatus
			if st, err = kv.Status(ctx); err == nil && st.TTL() == ttl {
				if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok &&
					bs.StreamInfo().Config.Replicas == l.cfg.Replicas && bs.StreamInfo().Config.MaxBytes == OnceMaxBytes {
					return nil
				}
			}
		}
		if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		kv, err = l.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      OnceBucket,
			Description: "Herald: one-use keys (providers' signed tokens) seen within their window",
			TTL:         ttl,
			History:     1,
			MaxBytes:    OnceMaxBytes,
			Storage:     jetstream.FileStorage,
			Replicas:    l.cfg.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: once: %w", err)
	}
	return &Once{kv: kv}, nil
}

// Use records the use of key with value (what it was used for: a digest
// of the request). It answers nil for the key's first use and for a use
// with the value recorded before (the same request again, a retry), and
// ErrUsed for a use with another value. Of two concurrent first uses,
// one records and the other is a repeat of it.
func (o *Once) Use(ctx context.Context, key string, value []byte) error {
	sum := sha256.Sum256([]byte(key))
	k := hex.EncodeToString(sum[:])
	for range 3 {
		_, err := o.kv.Create(ctx, k, value)
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("eventlog: once: %w", err)
		}
		e, err := o.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired in between: use it anew
		}
		if err != nil {
			return fmt.Errorf("eventlog: once: %w", err)
		}
		if !bytes.Equal(e.Value(), value) {
			return ErrUsed
		}
		return nil
	}
	return fmt.Errorf("eventlog: once: the key %s came and went", k)
}
