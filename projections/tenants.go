package projections

import (
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketTenants    = []byte("tenants")
	bucketAPIKeys    = []byte("apikeys")     // prefix → APIKey
	bucketTenantKeys = []byte("tenant_keys") // tenant\x00prefix → empty
)

// Tenant is the read model of a tenant.
type Tenant struct {
	TenantID  string    `json:"tenantId"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// APIKey is the read model of an API key: its prefix and the SHA-256 of
// the raw key, never the key.
type APIKey struct {
	Prefix    string     `json:"prefix"`
	TenantID  string     `json:"tenantId"`
	Hash      string     `json:"hash"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
}

func tenantModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
		events.TenantCreated: decoded(applyTenantCreated),
		events.APIKeyCreated: decoded(applyAPIKeyCreated),
		events.APIKeyRevoked: decoded(applyAPIKeyRevoked),
	}, [][]byte{bucketTenants, bucketAPIKeys, bucketTenantKeys}
}

func applyTenantCreated(tx *bolt.Tx, ev eventlog.Event, d events.TenantCreatedData) error {
	return putJSON(tx.Bucket(bucketTenants), []byte(d.TenantID), Tenant{TenantID: d.TenantID, Name: d.Name, CreatedAt: ev.At})
}

func applyAPIKeyCreated(tx *bolt.Tx, ev eventlog.Event, d events.APIKeyCreatedData) error {
	// A prefix is unique across tenants (control draws again on a taken
	// one); should two tenants still draw one at the same instant, the
	// first key keeps the prefix and the other is never authenticated:
	// one tenant's key record is never overwritten by another's.
	var cur APIKey
	if ok, err := getJSON(tx.Bucket(bucketAPIKeys), []byte(d.Prefix), &cur); err != nil {
		return err
	} else if ok && cur.TenantID != ev.TenantID {
		return nil
	}
	k := APIKey{Prefix: d.Prefix, TenantID: ev.TenantID, Hash: d.Hash, CreatedAt: ev.At}
	if err := putJSON(tx.Bucket(bucketAPIKeys), []byte(d.Prefix), k); err != nil {
		return err
	}
	return tx.Bucket(bucketTenantKeys).Put(key(ev.TenantID, d.Prefix), []byte{})
}

func applyAPIKeyRevoked(tx *bolt.Tx, ev eventlog.Event, d events.APIKeyRevokedData) error {
	b := tx.Bucket(bucketAPIKeys)
	var k APIKey
	if ok, err := getJSON(b, []byte(d.Prefix), &k); err != nil || !ok || k.TenantID != ev.TenantID {
		return err
	}
	at := ev.At
	k.RevokedAt = &at
	if err := putJSON(b, []byte(d.Prefix), k); err != nil {
		return err
	}
	return tx.Bucket(bucketTenantKeys).Delete(key(ev.TenantID, d.Prefix))
}

// Tenant returns one tenant, or ErrNotFound.
func (s *Store) Tenant(tenantID string) (Tenant, error) {
	return getOne[Tenant](s, bucketTenants, []byte(tenantID))
}

// APIKeyByPrefix returns the key with this prefix, revoked or not, or
// ErrNotFound.
// It is read for every API request, so the decoded key is kept until a
// batch applies a key's creation or revocation (genCache).
func (s *Store) APIKeyByPrefix(prefix string) (APIKey, error) {
	return s.apiKeys.get(prefix, func() (APIKey, error) {
		return getOne[APIKey](s, bucketAPIKeys, []byte(prefix))
	})
}

// APIKeys lists a tenant's live (unrevoked) keys in prefix order.
func (s *Store) APIKeys(tenantID string, p Page) (keys []APIKey, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketAPIKeys)
		keys, next, err = listTenant(tx.Bucket(bucketTenantKeys), tenantID, p, func(prefix string, _ []byte) (APIKey, bool, error) {
			var k APIKey
			ok, err := getJSON(all, []byte(prefix), &k)
			return k, ok, err
		})
		return err
	})
	return keys, next, err
}

// Tenants lists every tenant in id order (the admin API's list).
func (s *Store) Tenants(p Page) (tenants []Tenant, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		tenants, next, err = listPrefix(tx.Bucket(bucketTenants), nil, p, decodeJSON[Tenant])
		return err
	})
	return tenants, next, err
}
