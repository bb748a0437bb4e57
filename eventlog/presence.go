package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PresenceBucket is the key-value bucket in which each live herald process
// keeps a key (its process id), renewed well within the bucket's TTL.
const PresenceBucket = "herald_presence"

// Presence tells which processes of a cluster are alive. Each process
// renews its own key in PresenceBucket every TTL/4 (Run); a key not renewed
// for TTL expires, so a process killed without a word is known dead TTL
// after its last renewal, not after the lease of the work it held.
//
// A process that is alive but cut off from NATS for longer than TTL looks
// dead too: TTL should outlast a cluster election (seconds), which is why
// the service uses its AckWait (the time after which the same process's
// unacknowledged work is offered to others anyway).
type Presence struct {
	kv   jetstream.KeyValue
	self string
	ttl  time.Duration

	mu    sync.Mutex
	known map[string]sighting // answers of Alive, reused for TTL/8
}

type sighting struct {
	alive bool
	at    time.Time
}

// Presence creates (or finds) the presence bucket with ttl and returns the
// presence of process self. ttl is at least 1 s.
func (l *Log) Presence(ctx context.Context, self string, ttl time.Duration) (*Presence, error) {
	ttl = max(ttl, time.Second)
	var kv jetstream.KeyValue
	err := l.retrying(ctx, func(ctx context.Context) (err error) {
		// A bucket as wanted is left alone (see ensureStream).
		kv, err = l.js.KeyValue(ctx, PresenceBucket)
		if err == nil {
			var st jetstream.KeyValueStatus
			if st, err = kv.Status(ctx); err == nil && st.TTL() == ttl {
				if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok &&
					bs.StreamInfo().Config.Replicas == l.cfg.Replicas {
					return nil
				}
			}
		}
		if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		kv, err = l.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      PresenceBucket,
			Description: "Herald: the live processes, each renewing its key",
			TTL:         ttl,
			History:     1,
			Storage:     jetstream.MemoryStorage,
			Replicas:    l.cfg.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: presence: %w", err)
	}
	return &Presence{kv: kv, self: self, ttl: ttl, known: map[string]sighting{}}, nil
}

// Run keeps the process's key until ctx ends, then removes it (a process
// that stops cleanly is known gone at once). A renewal that fails (an
// election) is tried again at the next tick.
func (p *Presence) Run(ctx context.Context) {
	tick := time.NewTicker(p.ttl / 4)
	defer tick.Stop()
	for {
		p.Renew(ctx)
		select {
		case <-ctx.Done():
			gone, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
			_ = p.kv.Delete(gone, p.self)
			cancel()
			return
		case <-tick.C:
		}
	}
}

// Renew puts the process's key once (Run does, every TTL/4). ctx ending
// does not stop this one put.
func (p *Presence) Renew(ctx context.Context) {
	try, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.ttl/4)
	defer cancel()
	_, _ = p.kv.Put(try, p.self, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
}

// Alive reports whether process id keeps its key. An unanswered question
// (an election) is an error: the caller treats the process as alive.
func (p *Presence) Alive(ctx context.Context, id string) (bool, error) {
	if id == p.self {
		return true, nil
	}
	p.mu.Lock()
	s, ok := p.known[id]
	p.mu.Unlock()
	if ok && time.Since(s.at) < p.ttl/8 {
		return s.alive, nil
	}
	try, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	_, err := p.kv.Get(try, id)
	alive := err == nil
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return true, err
	}
	p.mu.Lock()
	if len(p.known) > 4096 {
		clear(p.known) // a bound on ids seen; they are asked again
	}
	p.known[id] = sighting{alive: alive, at: time.Now()}
	p.mu.Unlock()
	return alive, nil
}
