// Package slack is the provider of the chat-slack channel (CONTRACT.md
// §10): Slack's Web API method chat.postMessage,
//
//	POST {apiBaseUrl}/api/chat.postMessage
//	Authorization: Bearer <botToken>
//	Content-Type: application/json; charset=utf-8
//	{"channel":"<channel or user id>","text":"<body>","blocks":<Block Kit, if any>}
//
// apiBaseUrl defaults to https://slack.com.
//
// Answers: 200 {"ok":true,"ts":…} is sent, and ts is the id. Slack reports
// most failures as 200 {"ok":false,"error":"<name>"}: the names that refuse
// the recipient or the message for good (channel_not_found, not_in_channel,
// is_archived, msg_too_long, invalid_blocks, …) are ErrRejected; every
// other name (ratelimited, invalid_auth, token_revoked, missing_scope,
// internal_error, …) and every non-200 status (429, 5xx) proves nothing was
// posted and is ErrNotSent. A 200 whose body cannot be read may have been
// posted: ErrOutcomeUnknown.
package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Slack chat channel.
const ChannelKey = "chat-slack"

// DefaultBaseURL is Slack's Web API host, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://slack.com"

// rejectErrors are chat.postMessage error names that refuse the recipient
// or the message for good: another workspace's bot would not do better.
var rejectErrors = map[string]bool{
	"channel_not_found":                        true,
	"not_in_channel":                           true,
	"is_archived":                              true,
	"user_not_found":                           true,
	"user_disabled":                            true,
	"cannot_dm_bot":                            true,
	"messages_tab_disabled":                    true,
	"restricted_action":                        true,
	"restricted_action_read_only_channel":      true,
	"restricted_action_thread_only_channel":    true,
	"restricted_action_non_threadable_channel": true,
	"msg_too_long":                             true,
	"no_text":                                  true,
	"invalid_blocks":                           true,
	"invalid_blocks_format":                    true,
	"too_many_attachments":                     true,
}

// Provider posts messages with one bot token. It is safe for concurrent
// use.
type Provider struct {
	provider.HTTP
	token string
}

var _ provider.New = New

// New builds the provider from the fields botToken (secret) and apiBaseUrl
// (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	p := &Provider{token: f.String("botToken", true), HTTP: provider.NewHTTP("slack", f.BaseURL("apiBaseUrl", DefaultBaseURL)+"/api/chat.postMessage", deps)}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

type postMessage struct {
	Channel string          `json:"channel"`
	Text    string          `json:"text"`
	Blocks  json.RawMessage `json:"blocks,omitempty"`
}

type answer struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// Send posts m's body (and blocks) to the channel or user m.To. The
// returned id is the message's ts.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.ChatContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "chat content has no body")
	}
	ans, err := p.PostJSON(ctx, http.Header{
		"Content-Type":  {"application/json; charset=utf-8"},
		"Authorization": {"Bearer " + p.token},
	}, postMessage{Channel: m.To, Text: c.Body, Blocks: c.Blocks})
	if err != nil {
		return "", err
	}
	if ans.Status != http.StatusOK {
		p.Log.LogAttrs(ctx, slog.LevelWarn, "slack did not take a message", slog.Int("status", ans.Status))
		return "", provider.Failf(provider.ErrNotSent, nil, "slack answered %d", ans.Status)
	}
	var a answer
	if ans.Decode(&a) != nil {
		return "", provider.Failf(provider.ErrOutcomeUnknown, ans.ReadErr, "slack answered 200 with an unreadable body")
	}
	if a.OK {
		return a.TS, nil
	}
	p.Log.LogAttrs(ctx, slog.LevelWarn, "slack refused a message", slog.String("error", a.Error))
	public := fmt.Sprintf("slack answered ok:false, %s", publicName(a.Error))
	if rejectErrors[a.Error] {
		return "", provider.Failf(provider.ErrRejected, nil, "%s", public)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "%s", public)
}

// publicName returns a Slack error name fit for the tenant's eyes: Slack's
// names are snake_case words; anything else is not repeated.
func publicName(name string) string {
	if name == "" || len(name) > 64 {
		return "no error name"
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return "an unknown error name"
		}
	}
	return name
}
