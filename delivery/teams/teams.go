// Package teams is the provider of the chat-teams channel: a Microsoft
// Teams incoming webhook (a Workflows "post to a channel when a webhook
// request is received" URL, or a legacy Office 365 connector URL), to
// which it posts one Adaptive Card:
//
//	POST {webhookUrl}
//	Content-Type: application/json
//	{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive",
//	  "content":{"type":"AdaptiveCard","version":"1.4","body":[{"type":"TextBlock","text":"<body>","wrap":true}]}}]}
//
// The webhook names the Teams channel; the message's address is not used.
// A chat content's blocks, when given, are the card's body elements (each
// an Adaptive Card element), and body is the card's fallback text.
// apiBaseUrl, when set, replaces the webhook URL's scheme and host.
//
// Teams gives a posted message no id, and its webhooks take no
// idempotency key: a retry of an unknown outcome may post twice.
//
// Answers: any 2xx is posted, except a legacy connector's 200 whose text
// reports the error it met ("Microsoft Teams endpoint returned HTTP error
// 429 …"), which is ErrNotSent. 400 (a payload Teams refuses) and 413 (too
// large) refuse the message for good (ErrRejected); every other answer
// (401, 403, 404 a webhook removed, 429, 5xx) proves nothing was posted
// and is ErrNotSent.
package teams

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Teams chat channel.
const ChannelKey = "chat-teams"

// Provider posts to one Teams webhook. It is safe for concurrent use.
type Provider struct {
	provider.HTTP
}

var _ provider.New = New

// New builds the provider from the fields webhookUrl (secret: its path
// holds the webhook's token) and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	h, err := provider.NewWebhookHTTP("teams", config, deps, nil)
	if err != nil {
		return nil, err
	}
	return &Provider{HTTP: h}, nil
}

type card struct {
	Schema       string          `json:"$schema"`
	Type         string          `json:"type"`
	Version      string          `json:"version"`
	Body         json.RawMessage `json:"body"`
	FallbackText string          `json:"fallbackText,omitempty"`
}

type attachment struct {
	ContentType string  `json:"contentType"`
	ContentURL  *string `json:"contentUrl"`
	Content     card    `json:"content"`
}

type payload struct {
	Type        string       `json:"type"`
	Attachments []attachment `json:"attachments"`
}

// Send posts m's body (or blocks) as an Adaptive Card. Teams gives no id:
// the returned id is "".
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.ChatContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "chat content has no body")
	}
	k := card{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4"}
	if len(c.Blocks) > 0 {
		k.Body, k.FallbackText = c.Blocks, c.Body
	} else {
		k.Body, _ = json.Marshal([]map[string]any{{"type": "TextBlock", "text": c.Body, "wrap": true}})
	}
	ans, err := p.PostJSON(ctx, nil, payload{Type: "message", Attachments: []attachment{{
		ContentType: "application/vnd.microsoft.card.adaptive", Content: k}}})
	if err != nil {
		return "", err
	}
	status := ans.Status
	if status/100 == 2 {
		if bytes.Contains(ans.Body, []byte("returned HTTP error")) {
			// A legacy connector met an error behind the webhook and
			// said so in a 200: nothing was posted.
			p.Log.LogAttrs(ctx, slog.LevelWarn, "teams webhook reported an error in its answer", slog.Int("status", status))
			return "", provider.Failf(provider.ErrNotSent, nil, "teams answered %d with an error", status)
		}
		return "", nil
	}
	// Teams's text is not logged: it may quote the webhook's URL.
	p.Log.LogAttrs(ctx, slog.LevelWarn, "teams refused a message", slog.Int("status", status))
	return "", provider.Failf(provider.RefusalKind(status), nil, "teams answered %d", status)
}
