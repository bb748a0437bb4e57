package control

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
)

const (
	// signingSecretPrefix starts every Bridge signing secret, so a leaked
	// one is recognisable.
	signingSecretPrefix = "whsec_"
	// signingSecretLen is the number of random base62 characters after
	// the prefix (about 190 bits).
	signingSecretLen = 32
	// maxWebhookURL bounds the length of a Bridge URL.
	maxWebhookURL = 2048
)

// BridgeRegistration is the answer to ConfigureBridge: the signing secret
// is shown once.
type BridgeRegistration struct {
	WebhookURL    string
	SigningSecret string
}

// ConfigureBridge registers the tenant's Bridge URL with a new signing
// secret, every call (rotation: the previous secret stops being used at
// once). The secret is stored sealed and returned only here. The Bridge
// is not called.
//
// Errors: a *apierr.ValidationError naming webhookUrl when it is not an absolute
// http(s) URL with a host (or carries credentials, which would be stored
// in clear).
func (c *Control) ConfigureBridge(ctx context.Context, tenant, webhookURL string) (BridgeRegistration, error) {
	var p apierr.Problems
	if problem := checkWebhookURL(webhookURL); problem != "" {
		p.Add("webhookUrl", "%s", problem)
	} else if problem := c.checkDestinationURL(ctx, webhookURL); problem != "" {
		p.Add("webhookUrl", "%s", problem)
	}
	if err := p.Err(); err != nil {
		return BridgeRegistration{}, err
	}
	secret, err := secrets.NewToken(signingSecretPrefix, signingSecretLen)
	if err != nil {
		return BridgeRegistration{}, err
	}
	sealed, err := c.keys.Seal([]byte(secret), events.BridgeSecretAAD(tenant))
	if err != nil {
		return BridgeRegistration{}, fmt.Errorf("control: sealing the signing secret: %w", err)
	}
	// Each registration replaces the last whatever it was: no expected
	// sequence. Of two concurrent ones, the later in the log wins.
	if _, err := c.commit(ctx, eventlog.Record{
		Subject: eventlog.Subject(tenant, eventlog.AggBridge, tenant), Type: events.BridgeConfigured, Tenant: tenant,
		Data: events.BridgeConfiguredData{WebhookURL: webhookURL, SealedSecret: sealed},
	}); err != nil {
		return BridgeRegistration{}, err
	}
	return BridgeRegistration{WebhookURL: webhookURL, SigningSecret: secret}, nil
}

// checkWebhookURL returns what is wrong with a Bridge URL, or "".
func checkWebhookURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	if len(raw) > maxWebhookURL {
		return fmt.Sprintf("must be at most %d bytes", maxWebhookURL)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") ||
		u.Opaque != "" || u.Hostname() == "" || strings.ContainsAny(raw, " \t\r\n") {
		return "must be an absolute http or https URL with a host"
	}
	if u.User != nil {
		return "must not carry credentials"
	}
	return ""
}

// checkDestinationURL returns what the egress policy finds wrong with a
// valid Bridge URL, or "": with private egress off it must be https and
// its host must not be (or resolve only to) an internal address.
func (c *Control) checkDestinationURL(ctx context.Context, raw string) string {
	if c.egress == nil || c.egress.AllowPrivate {
		return ""
	}
	u, _ := url.Parse(raw) // checked by checkWebhookURL
	if u.Scheme != "https" {
		return "must be an https URL (plain http is for development, with HERALD_ALLOW_PRIVATE_EGRESS)"
	}
	return c.checkDestinationHost(ctx, u.Hostname())
}

// checkDestinationHost returns what the egress policy finds wrong with a
// destination host, or "". The tenant learns no resolved address.
func (c *Control) checkDestinationHost(ctx context.Context, host string) string {
	if c.egress == nil {
		return ""
	}
	if _, _, err := egress.ParseHost(host); err != nil {
		// Refused at every dial, development included.
		return "must be a DNS name or an IP address (a host ending in a number is read as an IPv4 address, and this is none)"
	}
	if err := c.egress.CheckHost(ctx, host); err != nil {
		c.logger.Info("control: destination refused by the egress policy", "host", host, "err", err)
		return "must not be or resolve to a loopback, private, link-local or otherwise internal address"
	}
	return ""
}

// Bridge returns the tenant's Bridge binding as the local projections
// hold it, or an *apierr.Error of kind apierr.ErrNotFound with code
// bridge_not_configured before the first registration.
func (c *Control) Bridge(tenant string) (projections.BridgeBinding, error) {
	return bridgeBinding(c.store, tenant)
}

// bridgeBinding is Control.Bridge over store.
func bridgeBinding(store *projections.Store, tenant string) (projections.BridgeBinding, error) {
	bb, err := store.Bridge(tenant)
	if errors.Is(err, projections.ErrNotFound) {
		return bb, bridgeNotConfigured()
	}
	return bb, err
}

// BridgeSecret returns the tenant's Bridge URL and its current signing
// secret in clear, for signing calls to the Bridge. It first waits until
// the local projections hold the tenant's last registration, so a call
// made after a rotation (through any process) gets the new secret. The
// secret must never be logged or stored.
//
// Errors: an *apierr.Error of kind apierr.ErrNotFound with code bridge_not_configured
// before the first registration; an error wrapping a secrets sentinel when
// the sealed secret does not open.
func (c *Control) BridgeSecret(ctx context.Context, tenant string) (webhookURL, secret string, err error) {
	return c.bridges.BridgeSecret(ctx, tenant)
}

// BridgeSecrets opens tenants' Bridge signing secrets, as
// Control.BridgeSecret does, for the runtime a Control is built with: that
// runtime calls Bridges and exists before the Control. It is safe for
// concurrent use.
type BridgeSecrets struct {
	log   *eventlog.Log
	store *projections.Store
	keys  *secrets.Keyring
}

// NewBridgeSecrets returns the BridgeSecrets of the bindings log holds,
// read from store and opened with keys.
func NewBridgeSecrets(log *eventlog.Log, store *projections.Store, keys *secrets.Keyring) *BridgeSecrets {
	return &BridgeSecrets{log: log, store: store, keys: keys}
}

// BridgeSecret is Control.BridgeSecret.
func (b *BridgeSecrets) BridgeSecret(ctx context.Context, tenant string) (webhookURL, secret string, err error) {
	seq, err := b.log.SubjectLastSeq(ctx, eventlog.Subject(tenant, eventlog.AggBridge, tenant))
	if err != nil {
		return "", "", err
	}
	if err := b.store.WaitFor(ctx, seq); err != nil {
		return "", "", err
	}
	bb, err := bridgeBinding(b.store, tenant)
	if err != nil {
		return "", "", err
	}
	plain, err := b.keys.Open(bb.SealedSecret, events.BridgeSecretAAD(tenant))
	if err != nil {
		return "", "", fmt.Errorf("control: opening the Bridge signing secret: %w", err)
	}
	return bb.WebhookURL, string(plain), nil
}

func bridgeNotConfigured() error {
	return apierr.Missing(apierr.CodeBridgeNotConfigured, "no Bridge is registered: PUT /v1/bridge first")
}
