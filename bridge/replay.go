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
