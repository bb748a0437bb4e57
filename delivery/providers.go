package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/fcm"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/ses"
	"github.com/heraldhq/herald/delivery/slack"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/delivery/twilio"
	"github.com/heraldhq/herald/delivery/webhook"
)

// registry maps a catalog entry's channel key to the constructor of its
// provider: one line per provider package (`twilio.ChannelKey:
// twilio.New`). The entries that need the Service's own parts (email-smtp:
// the shared SMTP sender; in-app: the event log) are added by NewService.
// A catalog entry without a provider fails its sends as not sent, so the
// next channel of the kind is tried.
var registry = map[string]provider.New{
	ses.ChannelKey:     ses.New,
	twilio.ChannelKey:  twilio.New,
	slack.ChannelKey:   slack.New,
	fcm.ChannelKey:     fcm.New,
	webhook.ChannelKey: webhook.New,
}

// providers returns the constructors a Service uses: the registry, the
// Service's own entries, then cfg.Providers over them.
func (s *Service) providers() map[string]provider.New {
	all := make(map[string]provider.New, len(registry)+2+len(s.cfg.Providers))
	for k, v := range registry {
		all[k] = v
	}
	all["email-smtp"] = newSMTPProvider(s.cfg.SMTP)
	all["in-app"] = newInAppProvider(s.cfg.Log)
	for k, v := range s.cfg.Providers {
		all[k] = v
	}
	return all
}

// providerCache keeps one provider per (tenant, channel) and config
// version, so a provider's state (pooled connections, an OAuth token) lives
// across sends.
type providerCache struct {
	mu sync.Mutex
	m  map[string]cachedProvider
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
	p, err := build()
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]cachedProvider{}
	}
	c.m[key] = cachedProvider{version: version, p: p}
	return p, nil
}

// smtpProvider sends email-smtp messages through the Service's shared
// smtp.Sender (which pools sessions per channel).
type smtpProvider struct {
	sender *smtp.Sender
	cfg    smtp.Config
}

// newSMTPProvider is the provider.New of email-smtp over sender.
func newSMTPProvider(sender *smtp.Sender) provider.New {
	return func(config map[string]any, _ provider.Deps) (provider.Provider, error) {
		c, err := smtpConfig(config)
		if err != nil {
			return nil, err
		}
		return &smtpProvider{sender: sender, cfg: c}, nil
	}
}

// Send sends m's wire.EmailContent. Every try of one key carries the same
// Message-ID, derived from the tenant and m.IdempotencyKey, so that mail
// clients can drop a copy of a retried unknown outcome.
func (p *smtpProvider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.EmailContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "the email content does not decode")
	}
	// The whole content goes to the composer, which makes html and text
	// one multipart/alternative message and carries replyTo.
	msg := smtp.Message{To: m.To, Subject: c.Subject, Body: c.Body, HTML: c.HTML, Text: c.Text, ReplyTo: c.ReplyTo,
		MessageID: email.MessageID(m.Tenant, m.IdempotencyKey, p.cfg.FromEmail), ListUnsubscribe: m.ListUnsubscribe}
	res, err := p.sender.Send(ctx, p.cfg, msg)
	if err != nil {
		return "", smtpFailure(err)
	}
	return res.MessageID, nil
}

// smtpFailure maps an error of smtp.Sender.Send onto the provider kinds.
// An error that already is one of them keeps its kind. Otherwise: a 5xx
// to RCPT or to the message is a rejection; a failure during DATA with no
// reply (a timeout, a broken connection) is an unknown outcome; every
// other failure (connect, TLS, AUTH, MAIL, a 4xx) came before the server
// took the message: not sent. An invalid message is rejected.
func smtpFailure(err error) error {
	public := smtp.PublicMessage(err)
	for _, kind := range []error{provider.ErrRejected, provider.ErrOutcomeUnknown, provider.ErrNotSent} {
		if errors.Is(err, kind) {
			return provider.Failf(kind, err, "%s", public)
		}
	}
	var se *smtp.Error
	switch {
	case errors.As(err, &se) && (se.Command == "RCPT" || se.Command == "DATA") && se.Code/100 == 5:
		return provider.Failf(provider.ErrRejected, err, "%s", public)
	case errors.As(err, &se) && se.Command == "DATA" && se.Code == 0:
		return provider.Failf(provider.ErrOutcomeUnknown, err, "%s", public)
	case errors.Is(err, smtp.ErrInvalid):
		return provider.Failf(provider.ErrRejected, err, "%s", public)
	}
	return provider.Failf(provider.ErrNotSent, err, "%s", public)
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
