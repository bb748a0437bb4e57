// Package discord is the provider of the chat-discord channel: a Discord
// channel webhook (Execute Webhook),
//
//	POST {webhookUrl}?wait=true
//	Content-Type: application/json
//	{"content":"<body>","embeds":<blocks, if any>}
//
// wait=true makes Discord answer the created message, whose id is the
// provider's id. The webhook names the Discord channel (or, with its
// thread_id query, the thread); the message's address is not used. A chat
// content's blocks, when given, are the message's embeds (an array of
// Discord embed objects). apiBaseUrl, when set, replaces the webhook URL's
// scheme and host.
//
// Discord's Execute Webhook takes no idempotency key (the nonce of Create
// Message is not among its parameters): a retry of an unknown outcome may
// post twice.
//
// Answers: 200 with the message (its "id"), or 204, is posted. 400 (an
// invalid body: code 50006 empty message, 50035 invalid form body, e.g.
// content over 2000 characters) and 413 refuse the message for good
// (ErrRejected); every other answer (401 and 403 a bad token, 404 code
// 10015 unknown webhook, 429 rate limited, 5xx) proves nothing was posted
// and is ErrNotSent.
package discord

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Discord chat channel.
const ChannelKey = "chat-discord"

// Provider posts to one Discord webhook. It is safe for concurrent use.
type Provider struct {
	provider.HTTP
}

var _ provider.New = New

// New builds the provider from the fields webhookUrl (secret: its path
// holds the webhook's token) and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	h, err := provider.NewWebhookHTTP("discord", config, deps, url.Values{"wait": {"true"}})
	if err != nil {
		return nil, err
	}
	return &Provider{HTTP: h}, nil
}

type execute struct {
	Content string          `json:"content"`
	Embeds  json.RawMessage `json:"embeds,omitempty"`
}

// discordError is Discord's error answer.
type discordError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Send posts m's body (and blocks as embeds). The returned id is the
// Discord message's id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.ChatContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "chat content has no body")
	}
	ans, err := p.PostJSON(ctx, nil, execute{Content: c.Body, Embeds: c.Blocks})
	if err != nil {
		return "", err
	}
	status := ans.Status
	if status/100 == 2 {
		var msg struct {
			ID string `json:"id"`
		}
		if status != http.StatusNoContent && (ans.Decode(&msg) != nil || msg.ID == "") {
			// Posted; only the answer is unreadable.
			p.Log.LogAttrs(ctx, slog.LevelWarn, "discord posted a message without a readable id", slog.Int("status", status))
		}
		return msg.ID, nil
	}
	var de discordError
	_ = json.Unmarshal(ans.Body, &de)
	p.Log.LogAttrs(ctx, slog.LevelWarn, "discord refused a message",
		slog.Int("status", status), slog.Int("code", de.Code), slog.String("message", de.Message))
	kind := provider.RefusalKind(status)
	if de.Code != 0 {
		return "", provider.Failf(kind, nil, "discord answered %d, code %d", status, de.Code)
	}
	return "", provider.Failf(kind, nil, "discord answered %d", status)
}
