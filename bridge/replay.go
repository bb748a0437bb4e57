package bridge

import (
	"encoding/hex"
	"sync"
)

// DefaultMaxReplayEntries is how many signatures a [Serve] handler
// remembers to refuse replays when [Options.MaxReplayEntries] is zero.
const DefaultMaxReplayEntries = 100_000

// replays remembers the signatures of the requests a handler accepted, to
// refuse a second request with the same signature (the same timestamp and
// body, signed with the same secret) inside the tolerance window, where
// Verify alone would accept it. It holds at most max signatures, evicting
// the oldest first: under that many requests per window every replay is
// refused. Safe for concurrent use.
type replays struct {
	mu   sync.Mutex
	max  int
	seen map[[32]byte]struct{}
	ring [][32]byte // insertion order; next is the slot to overwrite once full
	next int
}

func newReplays(max int) *replays {
	return &replays{max: max, seen: map[[32]byte]struct{}{}}
}

// first records signature and reports whether it was not seen before. A
// signature that is not 64 hex digits (Verify refused it already) is
// always first.
func (r *replays) first(signature string) bool {
	var key [32]byte
	if len(signature) != 64 {
		return true
	}
	if _, err := hex.Decode(key[:], []byte(signature)); err != nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.seen[key]; dup {
		return false
	}
	r.seen[key] = struct{}{}
	if len(r.ring) < r.max {
		r.ring = append(r.ring, key)
		return true
	}
	delete(r.seen, r.ring[r.next])
	r.ring[r.next] = key
	r.next = (r.next + 1) % r.max
	return true
}

// sent remembers what a Client signed in the current second, so that it
// never sends two byte-identical signed requests (which a Bridge would
// refuse as a replay): a repeat is signed with the next second instead.
type sent struct {
	mu     sync.Mutex
	at     map[string]int64 // signature → its timestamp, none before pruned
	pruned int64
}

// stamp returns the timestamp and signature for body: now, or the first
// later second whose signature this Client has not sent yet.
func (s *sent) stamp(secret string, now int64, body []byte) (int64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]int64{}
	}
	if s.pruned < now {
		// Timestamps before now are never signed again: they cannot collide.
		for sig, ts := range s.at {
			if ts < now {
				delete(s.at, sig)
			}
		}
		s.pruned = now
	}
	for ts := now; ; ts++ {
		sig := Sign(secret, ts, body)
		if _, dup := s.at[sig]; !dup {
			s.at[sig] = ts
			return ts, sig
		}
	}
}
