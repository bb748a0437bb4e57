package engine

import (
	"context"
	"sync"
)

// bridgeCache keeps each tenant's opened signing secret next to the sealed
// value it came from, so a step costs no log round trip and no decryption
// while the binding is unchanged.
type bridgeCache struct {
	mu sync.Mutex
	m  map[string]bridgeEntry
}

type bridgeEntry struct {
	sealed, url, secret string
}

// binding returns the tenant's Bridge URL and signing secret. It trusts
// the local projection when its sealed value matches the cache; fresh asks
// Bridges, which waits for the newest binding in the log.
func (e *Engine) binding(ctx context.Context, tenant string, fresh bool) (url, secret string, err error) {
	if !fresh {
		if bb, err := e.store.Bridge(tenant); err == nil {
			e.bridges.mu.Lock()
			ent, ok := e.bridges.m[tenant]
			e.bridges.mu.Unlock()
			if ok && ent.sealed == bb.SealedSecret {
				return ent.url, ent.secret, nil
			}
		}
	}
	url, secret, err = e.bridgeSrc.BridgeSecret(ctx, tenant)
	if err != nil {
		return "", "", err
	}
	if bb, berr := e.store.Bridge(tenant); berr == nil && bb.WebhookURL == url {
		e.bridges.mu.Lock()
		if e.bridges.m == nil {
			e.bridges.m = map[string]bridgeEntry{}
		}
		e.bridges.m[tenant] = bridgeEntry{sealed: bb.SealedSecret, url: url, secret: secret}
		e.bridges.mu.Unlock()
	}
	return url, secret, nil
}
