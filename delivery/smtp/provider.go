package smtp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog entry this package serves.
const ChannelKey = "email-smtp"

var _ provider.New = New

// sessionsPerChannel bounds the sessions a channel's provider opens, and
// keeps them all while idle: none is opened and quit per message, and no
// relay sees more connections from one channel than this.
const sessionsPerChannel = 32

// Provider sends the messages of one email-smtp channel through a Sender.
// It is safe for concurrent use.
type Provider struct {
	sender *Sender
	owned  bool // Close closes sender
	cfg    Config
}

// New builds the provider of one email-smtp channel from its opened config
// (host, port, secure, username, password, allowInsecureAuth, fromEmail,
// fromName, as encoding/json decodes them). The provider has its own
// Sender, which dials through deps.Dial with deps.TLSConfig and keeps up
// to 32 sessions; Close ends them. New fails on a config that cannot work,
// naming the field and never the password.
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	cfg, err := ParseConfig(config)
	if err != nil {
		return nil, err
	}
	s := NewSender(Options{
		DialContext: deps.Dial, TLSConfig: deps.TLSConfig,
		MaxIdlePerChannel: sessionsPerChannel, MaxOpenPerChannel: sessionsPerChannel,
	})
	return &Provider{sender: s, owned: true, cfg: cfg}, nil
}

// New is a provider.New whose providers send through s, sharing its
// sessions and its Options; their Close leaves s open.
func (s *Sender) New(config map[string]any, _ provider.Deps) (provider.Provider, error) {
	cfg, err := ParseConfig(config)
	if err != nil {
		return nil, err
	}
	return &Provider{sender: s, cfg: cfg}, nil
}

// ParseConfig reads an opened email-smtp config (JSON values as
// encoding/json decodes them) into a Config and validates it.
func ParseConfig(m map[string]any) (Config, error) {
	str := func(k string) string { v, _ := m[k].(string); return v }
	var port int
	switch v := m["port"].(type) {
	case float64:
		port = int(v)
		if float64(port) != v {
			port = 0
		}
	case int:
		port = v
	}
	secure, _ := m["secure"].(bool)
	insecureAuth, _ := m["allowInsecureAuth"].(bool)
	c := Config{Host: str("host"), Port: port, Secure: secure, Username: str("username"),
		Password: str("password"), FromEmail: str("fromEmail"), FromName: str("fromName"),
		AllowInsecureAuth: insecureAuth}
	return c, c.Validate()
}

// Send sends m's wire.EmailContent, all of it: html and text make one
// multipart/alternative message, replyTo its Reply-To. Every try of one
// key carries the same Message-ID, derived from the tenant and
// m.IdempotencyKey, so that mail clients can drop a copy of a retried
// unknown outcome; it is the id Send returns.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.EmailContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "the email content does not decode")
	}
	msg := Message{To: m.To, Subject: c.Subject, Body: c.Body, HTML: c.HTML, Text: c.Text, ReplyTo: c.ReplyTo,
		MessageID: email.MessageID(m.Tenant, m.IdempotencyKey, p.cfg.FromEmail), ListUnsubscribe: m.ListUnsubscribe}
	res, err := p.sender.Send(ctx, p.cfg, msg)
	if err != nil {
		return "", failure(err)
	}
	return res.MessageID, nil
}

// Close ends the sessions of a provider New built; sends in flight finish
// first, and a later Send fails as not sent. It always returns nil.
func (p *Provider) Close() error {
	if p.owned {
		p.sender.Close()
	}
	return nil
}

// failure gives an error of Sender.Send the provider's form: a
// *provider.Error of its kind (see Error.Is) whose Public is the reply's
// code, never its text.
func failure(err error) error {
	public := PublicMessage(err)
	for _, kind := range []error{provider.ErrRejected, provider.ErrOutcomeUnknown, provider.ErrNotSent} {
		if errors.Is(err, kind) {
			return provider.Failf(kind, err, "%s", public)
		}
	}
	// Every error of Send has a kind; should one not, nothing says the
	// server took the message.
	return provider.Failf(provider.ErrNotSent, err, "%s", public)
}
