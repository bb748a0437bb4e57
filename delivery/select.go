package delivery

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
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

// SelectChannels returns the tenant's enabled channels of kind as store
// holds them, in the order a send tries them (the order of [Select]), or
// an error wrapping [ErrNoChannel] when there is none.
func SelectChannels(store *projections.Store, tenant, kind string) ([]projections.Channel, error) {
	chs, err := store.Channels(tenant)
	if err != nil {
		return nil, err
	}
	cands := make([]Candidate, len(chs))
	byKey := make(map[string]projections.Channel, len(chs))
	for i, ch := range chs {
		cands[i] = Candidate{ChannelKey: ch.ChannelKey, Kind: ch.Kind, Enabled: ch.Enabled,
			Priority: ch.Priority, CreatedAt: ch.CreatedAt, Seq: ch.Seq}
		byKey[ch.ChannelKey] = ch
	}
	var out []projections.Channel
	for {
		best, err := Select(cands, kind)
		if err != nil {
			if len(out) == 0 {
				return nil, err
			}
			return out, nil
		}
		out = append(out, byKey[best.ChannelKey])
		cands = slices.DeleteFunc(cands, func(c Candidate) bool { return c.ChannelKey == best.ChannelKey })
	}
}

// OpenChannelConfig returns the whole config of one of the tenant's
// channels: its public fields with its secret fields opened with keys and
// merged in. Numbers are float64, as encoding/json decodes them. It is
// the only place a channel secret is decrypted; the result holds secrets
// in clear and must never be logged, stored or returned by the API.
//
// A sealed value that does not open (a key no longer in the keyring, a
// value altered or copied from another tenant, channel or field) is an
// error wrapping the secrets sentinel (ErrUnknownKey, ErrDecrypt,
// ErrMalformed); it names the field, never a value.
func OpenChannelConfig(keys *secrets.Keyring, tenant string, ch projections.Channel) (map[string]any, error) {
	entry, ok := LookupChannel(ch.ChannelKey)
	if !ok {
		return nil, fmt.Errorf("delivery: channel %q is not in the catalog", ch.ChannelKey)
	}
	opened := make(map[string]string, len(ch.Sealed))
	for field, sealed := range ch.Sealed {
		plain, err := keys.Open(sealed, events.ChannelSecretAAD(tenant, ch.ChannelKey, field))
		if err != nil {
			return nil, fmt.Errorf("delivery: opening %s of channel %q: %w", field, ch.ChannelKey, err)
		}
		opened[field] = string(plain)
	}
	return entry.Merge(ch.Public, opened), nil
}
