package projections

import (
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

var bucketBridge = []byte("bridge") // tenant → BridgeBinding

// BridgeBinding is the read model of a tenant's Bridge registration: its
// URL and the current signing secret, sealed (see
// control.Control.BridgeSecret, the one place it is opened).
type BridgeBinding struct {
	WebhookURL string `json:"webhookUrl"`
	// SealedSecret is the signing secret sealed with
	// events.BridgeSecretAAD(tenant).
	SealedSecret string `json:"sealedSecret"`
	// UpdatedAt is the time of the last registration (rotation).
	UpdatedAt time.Time `json:"updatedAt"`
}

func bridgeModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.BridgeConfigured: decoded(applyBridgeConfigured),
	}, [][]byte{bucketBridge}
}

func applyBridgeConfigured(tx *bolt.Tx, ev eventlog.Event, d events.BridgeConfiguredData) error {
	return putJSON(tx.Bucket(bucketBridge), []byte(ev.TenantID),
		BridgeBinding{WebhookURL: d.WebhookURL, SealedSecret: d.SealedSecret, UpdatedAt: ev.At})
}

// Bridge returns a tenant's Bridge binding, or ErrNotFound before its
// first registration. It is read for every Bridge call, so the decoded
// binding is kept until a batch applies a registration (genCache).
func (s *Store) Bridge(tenant string) (BridgeBinding, error) {
	return s.bridges.get(tenant, func() (BridgeBinding, error) {
		return getOne[BridgeBinding](s, bucketBridge, []byte(tenant))
	})
}
