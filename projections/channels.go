package projections

import (
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

var bucketChannels = []byte("channels") // tenant\x00channelKey → Channel

// Channel is the read model of one of a tenant's channels. Its config is
// kept as the log holds it: the public fields, and the secret fields
// sealed. Nothing here opens them (see delivery.OpenChannelConfig).
type Channel struct {
	ChannelKey string `json:"channelKey"`
	Kind       string `json:"kind"`
	Enabled    bool   `json:"enabled"`
	Priority   int    `json:"priority"`
	// CreatedAt is the time of the event that created the channel; a
	// repeat POST keeps it, a delete and a new POST start afresh.
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is the time of the last event that changed the channel.
	UpdatedAt time.Time `json:"updatedAt"`
	// Seq is the stream sequence of the creating event: it orders
	// channels created at the same instant.
	Seq uint64 `json:"seq"`
	// Public holds the config's non-secret fields, JSON values as decoded
	// by encoding/json (numbers are float64).
	Public map[string]any `json:"public"`
	// Sealed maps each secret field present in the config to its sealed
	// value.
	Sealed map[string]string `json:"sealed"`
	// InboundGeneration is the channel's current inbound generation
	// (ChannelInboundRotated): an inbound token names it. Empty until the
	// first rotation.
	InboundGeneration string `json:"inboundGeneration,omitempty"`
}

func channelModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.ChannelConfigured:     decoded(applyChannelConfigured),
		events.ChannelUpdated:        decoded(applyChannelUpdated),
		events.ChannelDeleted:        decoded(applyChannelDeleted),
		events.ChannelInboundRotated: decoded(applyChannelInboundRotated),
	}, [][]byte{bucketChannels}
}

func applyChannelConfigured(tx *bolt.Tx, ev eventlog.Event, d events.ChannelConfiguredData) error {
	b := tx.Bucket(bucketChannels)
	k := key(ev.TenantID, d.ChannelKey)
	var ch Channel
	ok, err := getJSON(b, k, &ch)
	if err != nil {
		return err
	}
	if !ok {
		ch = Channel{ChannelKey: d.ChannelKey, CreatedAt: ev.At, Seq: ev.Seq}
	}
	ch.Kind = d.Kind
	ch.Enabled = d.Enabled
	ch.Priority = d.Priority
	ch.Public, ch.Sealed = d.Config.Public, d.Config.Sealed
	ch.UpdatedAt = ev.At
	return putJSON(b, k, ch)
}

func applyChannelUpdated(tx *bolt.Tx, ev eventlog.Event, d events.ChannelUpdatedData) error {
	return updateJSON(tx.Bucket(bucketChannels), key(ev.TenantID, d.ChannelKey), func(ch *Channel) {
		if d.Config != nil {
			ch.Public, ch.Sealed = d.Config.Public, d.Config.Sealed
		}
		if d.Enabled != nil {
			ch.Enabled = *d.Enabled
		}
		ch.UpdatedAt = ev.At
	})
}

func applyChannelInboundRotated(tx *bolt.Tx, ev eventlog.Event, d events.ChannelInboundRotatedData) error {
	return updateJSON(tx.Bucket(bucketChannels), key(ev.TenantID, d.ChannelKey), func(ch *Channel) {
		ch.InboundGeneration = d.Generation
		ch.UpdatedAt = ev.At
	})
}

func applyChannelDeleted(tx *bolt.Tx, ev eventlog.Event, d events.ChannelDeletedData) error {
	return tx.Bucket(bucketChannels).Delete(key(ev.TenantID, d.ChannelKey))
}

// Channel returns one of a tenant's channels, or ErrNotFound.
func (s *Store) Channel(tenant, channelKey string) (Channel, error) {
	return getOne[Channel](s, bucketChannels, key(tenant, channelKey))
}

// Channels returns every channel of a tenant, enabled or not, in
// channelKey order (an empty slice when there is none). Every send reads
// them: they are kept decoded until a batch applies a change of a
// channel (genCache). The slice is the caller's; the channels' maps are
// shared, and must not be changed.
func (s *Store) Channels(tenant string) ([]Channel, error) {
	all, err := s.channels.get(tenant, func() ([]Channel, error) {
		// A tenant has at most one channel per catalog entry: no paging.
		all, _, err := listJSON[Channel](s, bucketChannels, tenant, Page{Limit: 1 << 30})
		return all, err
	})
	return append([]Channel{}, all...), err
}
