// Package mailgun is the provider of the email-mailgun channel: Mailgun's
// Messages API,
//
//	POST {apiBaseUrl}/v3/{domain}/messages
//	Authorization: Basic base64("api:<apiKey>")
//	Content-Type: multipart/form-data
//	from, to, subject, text, html, h:Reply-To, h:List-Unsubscribe, h:List-Unsubscribe-Post
//
// apiBaseUrl defaults to https://api.mailgun.net (https://api.eu.mailgun.net
// for a domain in Mailgun's EU region). The bodies are the ones the SMTP
// provider would send (email.Bodies). webhookSigningKey is read by inbound
// events, not here.
//
// Mailgun documents no idempotency key for its Messages API: a retry of an
// unknown outcome may send twice. The returned id is the answer's "id"
// without its angle brackets, as Mailgun's event webhooks carry it
// (event-data.message.headers.message-id).
//
// Answers: 200 with the message's "id" is sent. 400 (Mailgun refuses the
// request: "'to' parameter is not a valid address", a missing body) and
// 413 refuse the message for good (ErrRejected); every other answer (401
// a bad key, 403 a sandbox domain's unauthorised recipient or a disabled
// account, 404 an unknown domain, 429, 5xx) proves nothing was sent and is
// ErrNotSent.
package mailgun

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/mail"
	"strings"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Mailgun email channel.
const ChannelKey = "email-mailgun"

// DefaultBaseURL is Mailgun's API (its US region), used when apiBaseUrl
// is not set.
const DefaultBaseURL = "https://api.mailgun.net"

// Provider sends email through one Mailgun domain. It is safe for
// concurrent use.
type Provider struct {
	provider.HTTP
	auth string // the Authorization header
	from string
}

var _ provider.New = New

// New builds the provider from the fields apiKey (secret), domain,
// fromEmail, fromName, webhookSigningKey (secret) and apiBaseUrl
// (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	key, domain := f.String("apiKey", true), f.String("domain", true)
	if strings.ContainsAny(domain, "/?#%@:\\ ") {
		f.Fail(fmt.Errorf("domain: not a domain name"))
	}
	p := &Provider{HTTP: provider.NewHTTP("mailgun", "", deps),
		auth: "Basic " + base64.StdEncoding.EncodeToString([]byte("api:"+key)), from: f.From()}
	f.String("webhookSigningKey", false)
	p.Endpoint = f.BaseURL("apiBaseUrl", DefaultBaseURL) + "/v3/" + domain + "/messages"
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// Send sends m to m.To. The returned id is Mailgun's message id, without
// angle brackets.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.EmailContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "mailgun: the content is not email content")
	}
	fields := [][2]string{{"from", p.from}, {"to", m.To}, {"subject", c.Subject}}
	html, text := email.Bodies(c)
	if text != "" {
		fields = append(fields, [2]string{"text", text})
	}
	if html != "" {
		fields = append(fields, [2]string{"html", html})
	}
	if c.ReplyTo != "" {
		a, err := mail.ParseAddress(c.ReplyTo)
		if err != nil {
			return "", provider.Failf(provider.ErrRejected, nil, "mailgun: replyTo is not an address")
		}
		fields = append(fields, [2]string{"h:Reply-To", a.String()})
	}
	if m.ListUnsubscribe != "" {
		fields = append(fields, [2]string{"h:List-Unsubscribe", "<" + m.ListUnsubscribe + ">"},
			[2]string{"h:List-Unsubscribe-Post", "List-Unsubscribe=One-Click"})
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, f := range fields {
		_ = w.WriteField(f[0], f[1]) // a bytes.Buffer does not fail
	}
	_ = w.Close()
	ans, err := p.Post(ctx, http.Header{
		"Content-Type":  {w.FormDataContentType()},
		"Accept":        {"application/json"},
		"Authorization": {p.auth},
	}, body.Bytes())
	if err != nil {
		return "", err
	}
	var a struct {
		ID      string `json:"id"`
		Message string `json:"message"`
	}
	decodeErr := json.Unmarshal(ans.Body, &a)
	if ans.Status == http.StatusOK {
		if ans.ReadErr != nil || decodeErr != nil || a.ID == "" {
			p.Log.LogAttrs(ctx, slog.LevelWarn, "mailgun accepted a message without a readable id")
		}
		return strings.TrimSuffix(strings.TrimPrefix(a.ID, "<"), ">"), nil
	}
	// Mailgun's message may quote the recipient; the log is the operator's.
	p.Log.LogAttrs(ctx, slog.LevelWarn, "mailgun refused a message", slog.Int("status", ans.Status), slog.String("message", a.Message))
	return "", provider.Failf(provider.RefusalKind(ans.Status), nil, "mailgun answered %d", ans.Status)
}
