package delivery

import (
	"context"
	"io"
	"sync"

	"github.com/heraldhq/herald/delivery/provider"
)

// providers returns the constructors a Service uses: its own entry
// (in-app), then cfg.Providers over it (the registry of
// delivery/providers, in a server).
func (s *Service) providers() map[string]provider.New {
	all := make(map[string]provider.New, 1+len(s.cfg.Providers))
	all["in-app"] = newInAppProvider(s.cfg.Log)
	for k, v := range s.cfg.Providers {
		all[k] = v
	}
	return all
}

// providerCache keeps one provider per (tenant, channel) and config
// version, so a provider's state (pooled connections, an OAuth token) lives
// across sends. A provider replaced by a newer version, or still cached
// when the Service closes, is closed when it is an io.Closer.
type providerCache struct {
	mu     sync.Mutex
	m      map[string]cachedProvider
	closed bool
}

type cachedProvider struct {
	version string
	p       provider.Provider
}

// get returns the cached provider of key at version, or builds one.
func (c *providerCache) get(key, version string, build func() (provider.Provider, error)) (provider.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp, ok := c.m[key]; ok && cp.version == version {
		return cp.p, nil
	}
	if c.closed {
		return nil, provider.Failf(provider.ErrNotSent, nil, "delivery is stopping")
	}
	p, err := build()
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]cachedProvider{}
	}
	if old, ok := c.m[key]; ok {
		// The channel's config changed: a send still using the old
		// provider finishes (Close lets it), the next ones use p.
		closeProvider(old.p)
	}
	c.m[key] = cachedProvider{version: version, p: p}
	return p, nil
}

// close closes every cached provider; get builds no more.
func (c *providerCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cp := range c.m {
		closeProvider(cp.p)
	}
}

func closeProvider(p provider.Provider) {
	if c, ok := p.(io.Closer); ok {
		c.Close()
	}
}

// noProvider is the provider of a catalog entry whose provider package is
// not wired in: every send fails as not sent.
type noProvider struct{ channelKey string }

func (p noProvider) Send(context.Context, provider.Message) (string, error) {
	return "", provider.Failf(provider.ErrNotSent, nil, "channel %s has no provider in this build", p.channelKey)
}

// errNoProvider wraps a constructor's failure: the channel's config cannot
// work.
func errNoProvider(channelKey string, err error) error {
	return provider.Failf(provider.ErrNotSent, err, "channel %s: its config cannot work", channelKey)
}
