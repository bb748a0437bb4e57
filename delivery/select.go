package delivery

import (
	"cmp"
	"fmt"
	"time"
)

// Candidate is what [Select] needs to know of one of a tenant's channels.
type Candidate struct {
	// ChannelKey is the catalog key of the channel, unique per tenant.
	ChannelKey string
	// Kind is the catalog entry's kind, the contacts key it delivers to.
	Kind string
	// Enabled is false for a channel the tenant switched off.
	Enabled bool
	// Priority orders the channels of a kind: lower is chosen first.
	Priority int
	// CreatedAt is when the channel was first enabled: among equal
	// priorities the oldest is chosen.
	CreatedAt time.Time
	// Seq breaks ties of CreatedAt: the lower is older (the event log
	// sequence of the channel's creation).
	Seq uint64
}

// Select returns the channel a send of the given kind uses: among the enabled
// candidates of that kind, the one with the lowest Priority; ties go to the
// earliest CreatedAt, then the lowest Seq, then the lowest ChannelKey, so the
// choice never depends on the order of cands. Disabled candidates and other
// kinds are skipped. With none left the error wraps [ErrNoChannel] with the
// kind. Select is pure: it reads no clock and keeps no state.
func Select(cands []Candidate, kind string) (Candidate, error) {
	var best Candidate
	found := false
	for _, c := range cands {
		if c.Kind != kind || !c.Enabled {
			continue
		}
		if !found || prefer(c, best) {
			best, found = c, true
		}
	}
	if !found {
		return Candidate{}, fmt.Errorf("%w: %q", ErrNoChannel, kind)
	}
	return best, nil
}

// prefer reports whether a comes before b in the selection order.
func prefer(a, b Candidate) bool {
	return cmp.Or(
		cmp.Compare(a.Priority, b.Priority),
		a.CreatedAt.Compare(b.CreatedAt),
		cmp.Compare(a.Seq, b.Seq),
		cmp.Compare(a.ChannelKey, b.ChannelKey),
	) < 0
}
