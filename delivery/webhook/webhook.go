// Package webhook is the provider of the webhook channel (channelKey
// "webhook", CONTRACT.md §10): it POSTs
//
//	{"type":"message","tenantId","workflowId","runId","stepId","subscriberId","data"}
//
// to the channel's url, with the Standard Webhooks headers webhook-id (the
// same on every try of one send step, so a receiver can drop a repeat) and
// webhook-timestamp, and webhook-signature when the channel has a secret
// (package standardwebhooks).
//
// Answers: 2xx is sent (the id is the webhook-id); 400, 410, 413 and 422
// refuse the message for good (ErrRejected); any other answer, a redirect
// included, is ErrNotSent.
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/standardwebhooks"
)

// ChannelKey is the catalog key of the webhook channel.
const ChannelKey = "webhook"

// Provider posts messages to one webhook url. It is safe for concurrent use.
type Provider struct {
	url    string
	secret *standardwebhooks.Secret // nil: unsigned
	client *http.Client
	log    *slog.Logger
	now    func() time.Time
}

var _ provider.New = New

// New builds the provider from the fields url (an absolute http or https
// URL) and secret (optional, "whsec_<base64>").
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	raw, err := provider.ConfigString(config, "url", true)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url: want an absolute http(s) URL")
	}
	p := &Provider{url: raw, client: deps.HTTPClient, log: deps.Logger, now: deps.Now}
	secret, err := provider.ConfigString(config, "secret", false)
	if err != nil {
		return nil, err
	}
	if secret != "" {
		s, err := standardwebhooks.ParseSecret(secret)
		if err != nil {
			return nil, fmt.Errorf("secret: want whsec_<base64>")
		}
		p.secret = &s
	}
	return p, nil
}

// body is what a webhook send posts.
type body struct {
	Type         string          `json:"type"`
	TenantID     string          `json:"tenantId"`
	WorkflowID   string          `json:"workflowId"`
	RunID        string          `json:"runId"`
	StepID       string          `json:"stepId"`
	SubscriberID string          `json:"subscriberId"`
	Data         json.RawMessage `json:"data"`
}

// messageID is the webhook-id of a send: "msg_" and a digest of the
// tenant and the idempotency key, the same on every try.
func messageID(m provider.Message) string {
	sum := sha256.Sum256([]byte(m.Tenant + "\x00" + m.IdempotencyKey))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// Send posts m. The returned id is the webhook-id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.WebhookContent
	if err := json.Unmarshal(m.Content, &c); err != nil || len(c.Data) == 0 {
		return "", provider.Failf(provider.ErrRejected, err, "webhook content has no data")
	}
	b, err := json.Marshal(body{
		Type: "message", TenantID: m.Tenant, WorkflowID: m.WorkflowID, RunID: m.RunID,
		StepID: m.StepID, SubscriberID: m.SubscriberID, Data: c.Data,
	})
	if err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "webhook content data is not JSON")
	}
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"Herald-Webhook"}}
	id, now := messageID(m), p.now()
	if p.secret != nil {
		p.secret.SetHeaders(header, id, now, b)
	} else {
		header.Set(standardwebhooks.HeaderID, id)
		header.Set(standardwebhooks.HeaderTimestamp, fmt.Sprint(now.Unix()))
	}
	ans, err := provider.Post(ctx, p.client, "webhook", p.url, header, b)
	if err != nil {
		return "", err
	}
	switch status := ans.Status; {
	case status >= 200 && status < 300:
		return id, nil
	case status == http.StatusBadRequest, status == http.StatusGone,
		status == http.StatusRequestEntityTooLarge, status == http.StatusUnprocessableEntity:
		return "", provider.Failf(provider.ErrRejected, nil, "webhook endpoint answered %d", status)
	default:
		p.log.LogAttrs(ctx, slog.LevelWarn, "webhook endpoint did not accept the message",
			slog.Int("status", status), slog.String("webhookId", id))
		return "", provider.Failf(provider.ErrNotSent, nil, "webhook endpoint answered %d", status)
	}
}
