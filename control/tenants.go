package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// API key format: "hk_" + 8 base62 characters (the prefix, stored) + "_" +
// 32 base62 characters. Only the prefix and the SHA-256 of the whole key
// are stored.
const (
	keyPrefixLen = len("hk_") + 8
	keyLen       = keyPrefixLen + 1 + 32
)

// Minted ids: a tenant id is "ten_" + 16 base62 characters; an API key
// prefix is "hk_" + 8 (see keyPrefixLen).
const (
	tenantIDPrefix = "ten_"
	tenantIDChars  = 16
)

// ValidTenantID reports whether id has the form of a minted tenant id:
// "ten_" and 16 base62 characters. Anything else names no tenant (and must
// never reach a subject, where the tenant id is used raw).
func ValidTenantID(id string) bool {
	return len(id) == len(tenantIDPrefix)+tenantIDChars && strings.HasPrefix(id, tenantIDPrefix) &&
		base62Only(id[len(tenantIDPrefix):])
}

// ValidKeyPrefix reports whether p has the form of an API key prefix:
// "hk_" and 8 base62 characters.
func ValidKeyPrefix(p string) bool {
	return len(p) == keyPrefixLen && strings.HasPrefix(p, "hk_") && base62Only(p[3:])
}

func base62Only(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// NewTenant is the answer to CreateTenant: the raw API key is shown once.
type NewTenant struct {
	TenantID string
	Name     string
	APIKey   string
}

// NewAPIKey is the answer to CreateAPIKey: the raw key is shown once.
type NewAPIKey struct {
	APIKey string
	Prefix string
}

// CreateTenant records a new tenant and its first API key.
func (c *Control) CreateTenant(ctx context.Context, name string) (NewTenant, error) {
	name = strings.TrimSpace(name)
	var p apierr.Problems
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		p.Add("name", "is required")
	case n > 200:
		p.Add("name", "must be at most 200 characters")
	}
	if err := p.Err(); err != nil {
		return NewTenant{}, err
	}
	id, err := c.newToken(tenantIDPrefix, tenantIDChars)
	if err != nil {
		return NewTenant{}, err
	}
	if _, err := c.commit(ctx, eventlog.Record{
		Subject: eventlog.Subject(id, eventlog.AggTenant, id), Type: events.TenantCreated, Tenant: id,
		Data: events.TenantCreatedData{TenantID: id, Name: name}, Expect: true,
	}); err != nil {
		return NewTenant{}, err
	}
	key, err := c.CreateAPIKey(ctx, id)
	if err != nil {
		return NewTenant{}, err
	}
	return NewTenant{TenantID: id, Name: name, APIKey: key.APIKey}, nil
}

// CreateAPIKey mints a key for an existing tenant. Its prefix is unique
// across every tenant (the projections find a key by its prefix alone): a
// prefix any tenant holds, revoked or not, is drawn again. Errors:
// apierr.ErrNotFound (tenant_not_found) for a tenant id that is not minted or not
// known; apierr.ErrBusy when every draw collided.
func (c *Control) CreateAPIKey(ctx context.Context, tenantID string) (NewAPIKey, error) {
	if !ValidTenantID(tenantID) {
		return NewAPIKey{}, apierr.Errorf(apierr.CodeTenantNotFound, "no such tenant")
	}
	if _, err := c.store.Tenant(tenantID); errors.Is(err, projections.ErrNotFound) {
		return NewAPIKey{}, apierr.Errorf(apierr.CodeTenantNotFound, "tenant %q does not exist", tenantID)
	} else if err != nil {
		return NewAPIKey{}, err
	}
	var out NewAPIKey
	err := retry(ctx, func() error {
		prefix, err := c.newToken("hk_", 8)
		if err != nil {
			return err
		}
		// Another tenant's key under this prefix (the per-tenant subject
		// below cannot see it) is a collision too: draw again. The
		// projections see every key acknowledged before this moment.
		if err := c.store.WaitCaughtUp(ctx, c.log); err != nil {
			return err
		}
		if _, err := c.store.APIKeyByPrefix(prefix); err == nil {
			return fmt.Errorf("%w: API key prefix %s is taken", eventlog.ErrConflict, prefix)
		} else if !errors.Is(err, projections.ErrNotFound) {
			return err
		}
		secret, err := c.newToken("", 32)
		if err != nil {
			return err
		}
		raw := prefix + "_" + secret
		sum := sha256.Sum256([]byte(raw))
		// Expecting an empty subject makes a prefix collision a conflict,
		// and retry draws a new key.
		_, err = c.commit(ctx, eventlog.Record{
			Subject: eventlog.Subject(tenantID, eventlog.AggAPIKey, prefix), Type: events.APIKeyCreated,
			Tenant: tenantID, Data: events.APIKeyCreatedData{Prefix: prefix, Hash: hex.EncodeToString(sum[:])},
			Expect: true,
		})
		out = NewAPIKey{APIKey: raw, Prefix: prefix}
		return err
	})
	return out, err
}

// RevokeAPIKey revokes a tenant's key by prefix; it is refused at once.
//
// A prefix that is not of the minted form is apierr.ErrNotFound at once: it never
// reaches a subject; so is a tenant id that is not of the minted form (the
// admin API names the tenant in its path).
func (c *Control) RevokeAPIKey(ctx context.Context, tenantID, prefix string) error {
	if !ValidKeyPrefix(prefix) || !ValidTenantID(tenantID) {
		return apierr.Errorf(apierr.CodeNotFound, "no API key with this prefix")
	}
	subject := eventlog.Subject(tenantID, eventlog.AggAPIKey, prefix)
	return c.appendIfFound(ctx, tenantID, subject, events.APIKeyRevoked, events.APIKeyRevokedData{Prefix: prefix},
		func() error {
			k, err := c.store.APIKeyByPrefix(prefix)
			if errors.Is(err, projections.ErrNotFound) || (err == nil && (k.TenantID != tenantID || k.RevokedAt != nil)) {
				return apierr.Errorf(apierr.CodeNotFound, "no API key with prefix %q", prefix)
			}
			return err
		})
}

// Authenticate returns the tenant a raw API key belongs to, comparing its
// hash in constant time, or apierr.ErrUnauthenticated.
func (c *Control) Authenticate(raw string) (string, error) {
	if len(raw) != keyLen || !strings.HasPrefix(raw, "hk_") || raw[keyPrefixLen] != '_' {
		return "", apierr.ErrUnauthenticated
	}
	k, err := c.store.APIKeyByPrefix(raw[:keyPrefixLen])
	if errors.Is(err, projections.ErrNotFound) {
		return "", apierr.ErrUnauthenticated
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(raw))
	want, err := hex.DecodeString(k.Hash)
	if err != nil || subtle.ConstantTimeCompare(sum[:], want) != 1 || k.RevokedAt != nil {
		return "", apierr.ErrUnauthenticated
	}
	return k.TenantID, nil
}

// KeyPrefix returns the prefix of a raw key Authenticate accepted: the
// id of its APIKeyCreated and APIKeyRevoked events' subject.
func KeyPrefix(raw string) string { return raw[:keyPrefixLen] }

// APIKeys lists a tenant's live keys: prefixes and creation times.
func (c *Control) APIKeys(tenantID string, p projections.Page) ([]projections.APIKey, string, error) {
	return c.store.APIKeys(tenantID, p)
}

// Tenants lists every tenant in id order (the admin API).
func (c *Control) Tenants(p projections.Page) ([]projections.Tenant, string, error) {
	return c.store.Tenants(p)
}

// TenantAPIKeys lists the live keys of a tenant the admin names: a tenant
// id that is not known is apierr.ErrNotFound (tenant_not_found), so that
// a mistyped id is not taken for a tenant without keys.
func (c *Control) TenantAPIKeys(tenantID string, p projections.Page) ([]projections.APIKey, string, error) {
	if !ValidTenantID(tenantID) {
		return nil, "", apierr.Errorf(apierr.CodeTenantNotFound, "no such tenant")
	}
	if _, err := c.store.Tenant(tenantID); errors.Is(err, projections.ErrNotFound) {
		return nil, "", apierr.Errorf(apierr.CodeTenantNotFound, "tenant %q does not exist", tenantID)
	} else if err != nil {
		return nil, "", err
	}
	return c.store.APIKeys(tenantID, p)
}
