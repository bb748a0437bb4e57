package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/secrets"
)

// scriptedTokens draws tenant ids in sequence and API key prefixes from a
// script, so that two tenants can be made to draw the same prefix.
type scriptedTokens struct {
	mu       sync.Mutex
	tenants  int
	prefixes []string
}

func (s *scriptedTokens) next(prefix string, n int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch prefix {
	case "ten_":
		s.tenants++
		return fmt.Sprintf("ten_%016d", s.tenants), nil
	case "hk_":
		p := s.prefixes[0]
		s.prefixes = s.prefixes[1:]
		return p, nil
	}
	return secrets.NewToken(prefix, n)
}

// TestAPIKeyPrefixUniqueAcrossTenants: a key record is found by its
// prefix alone, so a prefix must be unique across tenants. The second tenant drawing the first tenant's prefix used to get
// it (the collision check was per tenant) and overwrite the first key's
// record, locking its owner out.
func TestAPIKeyPrefixUniqueAcrossTenants(t *testing.T) {
	ctx := context.Background()
	h := newChannelHarness(t, channelKeyring(t, 7))
	src := &scriptedTokens{prefixes: []string{"hk_AAAAAAAA", "hk_AAAAAAAA", "hk_BBBBBBBB"}}
	control.SetTokenSource(h.ctl, src.next)

	a, err := h.ctl.CreateTenant(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.ctl.CreateTenant(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.APIKey, "hk_AAAAAAAA_") || !strings.HasPrefix(b.APIKey, "hk_BBBBBBBB_") {
		t.Fatalf("keys %q and %q: the second tenant was not given a fresh prefix", a.APIKey[:11], b.APIKey[:11])
	}
	for _, c := range []struct{ key, tenant string }{{a.APIKey, a.TenantID}, {b.APIKey, b.TenantID}} {
		if got, err := h.ctl.Authenticate(c.key); err != nil || got != c.tenant {
			t.Fatalf("key %s authenticates as %q, %v; want %s", c.key[:11], got, err, c.tenant)
		}
	}

	// Should a collision still reach the log (two processes drawing one
	// prefix at the same instant), the first key keeps its record.
	seq, err := h.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(b.TenantID, eventlog.AggAPIKey, "hk_AAAAAAAA"),
		Type: events.APIKeyCreated, Tenant: b.TenantID, Data: events.APIKeyCreatedData{Prefix: "hk_AAAAAAAA", Hash: strings.Repeat("0", 64)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if got, err := h.ctl.Authenticate(a.APIKey); err != nil || got != a.TenantID {
		t.Fatalf("after a colliding record: the first key authenticates as %q, %v", got, err)
	}
}

func TestAPIKeyIDsOutsideTheirFormAreNotFound(t *testing.T) {
	ctx := context.Background()
	h := newChannelHarness(t, channelKeyring(t, 7))
	ten, err := h.ctl.CreateTenant(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{strings.Repeat("a", 4000), "hk_", "hk_AAAA.AAA", "hk_AAAAAAAA_x", ""} {
		if err := h.ctl.RevokeAPIKey(ctx, ten.TenantID, prefix); !errors.Is(err, apierr.ErrNotFound) {
			t.Errorf("revoke %.20q: %v, want apierr.ErrNotFound", prefix, err)
		}
	}
	for _, id := range []string{strings.Repeat("t", 4000), "ten_x", "ten_0000000000000000.", "ten_00000000000000*0"} {
		if _, err := h.ctl.CreateAPIKey(ctx, id); !errors.Is(err, apierr.ErrNotFound) {
			t.Errorf("create key of %.20q: %v, want apierr.ErrNotFound", id, err)
		}
	}
	if !h.log.Conn().IsConnected() {
		t.Fatal("the NATS connection was lost")
	}
}
