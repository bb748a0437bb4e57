package delivery

import (
	"context"
	"io"
	"sync"

	"github.com/heraldhq/herald/delivery/apns"
	"github.com/heraldhq/herald/delivery/discord"
	"github.com/heraldhq/herald/delivery/expo"
	"github.com/heraldhq/herald/delivery/fcm"
	"github.com/heraldhq/herald/delivery/mailgun"
	"github.com/heraldhq/herald/delivery/postmark"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/resend"
	"github.com/heraldhq/herald/delivery/sendgrid"
	"github.com/heraldhq/herald/delivery/ses"
	"github.com/heraldhq/herald/delivery/slack"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/delivery/teams"
	"github.com/heraldhq/herald/delivery/twilio"
	"github.com/heraldhq/herald/delivery/vonage"
	"github.com/heraldhq/herald/delivery/webhook"
)

// registry maps a catalog entry's channel key to the constructor of its
// provider: one line per provider package (`twilio.ChannelKey:
// twilio.New`). The in-app entry, which needs the Service's event log, is
// added by NewService.
// A catalog entry without a provider fails its sends as not sent, so the
// next channel of the kind is tried.
var registry = map[string]provider.New{
	smtp.ChannelKey:     smtp.New,
	ses.ChannelKey:      ses.New,
	twilio.ChannelKey:   twilio.New,
	slack.ChannelKey:    slack.New,
	fcm.ChannelKey:      fcm.New,
	webhook.ChannelKey:  webhook.New,
	teams.ChannelKey:    teams.New,
	discord.ChannelKey:  discord.New,
	postmark.ChannelKey: postmark.New,
	sendgrid.ChannelKey: sendgrid.New,
	mailgun.ChannelKey:  mailgun.New,
	vonage.ChannelKey:   vonage.New,
	expo.ChannelKey:     expo.New,
	apns.ChannelKey:     apns.New,
	resend.ChannelKey:   resend.New,
}

// providers returns the constructors a Service uses: the registry, the
// Service's own entry (in-app), then cfg.Providers over them.
func (s *Service) providers() map[string]provider.New {
	all := make(map[string]provider.New, len(registry)+1+len(s.cfg.Providers))
	for k, v := range registry {
		all[k] = v
	}
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
