package delivery

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldhq/herald/delivery/provider"
)

// closer is a provider holding connections: it counts its Close calls.
type closer struct{ closed int }

func (c *closer) Send(context.Context, provider.Message) (string, error) { return "", nil }
func (c *closer) Close() error                                           { c.closed++; return nil }

// TestProviderCacheClosesWhatItDrops: a provider replaced by a newer
// config version is closed, and so is every cached one when the cache
// closes; a closed cache builds nothing more and answers not sent.
func TestProviderCacheClosesWhatItDrops(t *testing.T) {
	var c providerCache
	v1, v2 := &closer{}, &closer{}
	get := func(version string, p *closer) (provider.Provider, error) {
		return c.get("ten\x00email-smtp", version, func() (provider.Provider, error) { return p, nil })
	}
	if p, err := get("1", v1); err != nil || p != v1 {
		t.Fatalf("get v1 = %v, %v", p, err)
	}
	if p, _ := get("1", v2); p != v1 || v1.closed != 0 {
		t.Fatalf("the same version: %v, v1 closed %d times", p, v1.closed)
	}
	if p, _ := get("2", v2); p != v2 || v1.closed != 1 || v2.closed != 0 {
		t.Fatalf("a new version: %v, closed v1 %d, v2 %d times", p, v1.closed, v2.closed)
	}
	c.close()
	if v2.closed != 1 || v1.closed != 1 {
		t.Fatalf("after close: closed v1 %d, v2 %d times", v1.closed, v2.closed)
	}
	if _, err := get("3", &closer{}); !errors.Is(err, provider.ErrNotSent) {
		t.Fatalf("get after close: %v, want not sent", err)
	}
}
