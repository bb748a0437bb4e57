// Package postmark is the provider of the email-postmark channel:
// Postmark's single-email API,
//
//	POST {apiBaseUrl}/email
//	X-Postmark-Server-Token: <serverToken>
//	Accept: application/json
//	Content-Type: application/json
//	{"From","To","Subject","HtmlBody","TextBody","ReplyTo","Headers":[{"Name","Value"}],"MessageStream"}
//
// apiBaseUrl defaults to https://api.postmarkapp.com. The bodies are the
// ones the SMTP provider would send (email.Bodies); a one-click
// unsubscribe URL goes as the List-Unsubscribe and List-Unsubscribe-Post
// headers. messageStream, when set, picks the Postmark message stream
// (Postmark's default is "outbound").
//
// Postmark documents no idempotency key for /email: a retry of an unknown
// outcome may send twice. The returned id is Postmark's MessageID, which
// its delivery, bounce and spam complaint webhooks carry as MessageID.
//
// Answers: 200 with ErrorCode 0 is sent. Postmark's error answer is
// {"ErrorCode","Message"} (HTTP 422, or 401 for a bad token): ErrorCode
// 300 (an invalid email request: an illegal address, no body), 406 (an
// inactive recipient: one that hard bounced, complained or was
// suppressed) and 411 refuse the message for good (ErrRejected); every
// other answer (10 a bad token, 400/401 an unknown or unconfirmed sender
// signature, 405 not allowed to send, 412 a pending account, 429, 500,
// 503) proves nothing was sent and is ErrNotSent.
package postmark

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/mail"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Postmark email channel.
const ChannelKey = "email-postmark"

// DefaultBaseURL is Postmark's API, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://api.postmarkapp.com"

// rejectCodes are Postmark error codes that refuse the recipient or the
// message for good.
var rejectCodes = map[int]bool{
	300: true, // invalid email request
	406: true, // inactive recipient
	411: true, // forbidden attachment type
}

// Provider sends email through one Postmark server. It is safe for
// concurrent use.
type Provider struct {
	provider.HTTP
	token         string
	from          string // "Name <address>" or the address
	messageStream string
}

var _ provider.New = New

// New builds the provider from the fields serverToken (secret), fromEmail,
// fromName, messageStream and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	p := &Provider{token: f.String("serverToken", true), from: f.From(), messageStream: f.String("messageStream", false),
		HTTP: provider.NewHTTP("postmark", f.BaseURL("apiBaseUrl", DefaultBaseURL)+"/email", deps)}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

type header struct {
	Name  string `json:"Name"`
	Value string `json:"Value"`
}

type request struct {
	From          string   `json:"From"`
	To            string   `json:"To"`
	Subject       string   `json:"Subject"`
	HTMLBody      string   `json:"HtmlBody,omitempty"`
	TextBody      string   `json:"TextBody,omitempty"`
	ReplyTo       string   `json:"ReplyTo,omitempty"`
	Headers       []header `json:"Headers,omitempty"`
	MessageStream string   `json:"MessageStream,omitempty"`
}

type answer struct {
	ErrorCode int    `json:"ErrorCode"`
	Message   string `json:"Message"`
	MessageID string `json:"MessageID"`
}

// Send sends m to m.To. The returned id is Postmark's MessageID.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.EmailContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "postmark: the content is not email content")
	}
	req := request{From: p.from, To: m.To, Subject: c.Subject, MessageStream: p.messageStream}
	req.HTMLBody, req.TextBody = email.Bodies(c)
	if c.ReplyTo != "" {
		a, err := mail.ParseAddress(c.ReplyTo)
		if err != nil {
			return "", provider.Failf(provider.ErrRejected, nil, "postmark: replyTo is not an address")
		}
		req.ReplyTo = a.String()
	}
	if m.ListUnsubscribe != "" {
		req.Headers = []header{{"List-Unsubscribe", "<" + m.ListUnsubscribe + ">"}, {"List-Unsubscribe-Post", "List-Unsubscribe=One-Click"}}
	}
	ans, err := p.PostJSON(ctx, http.Header{
		"Accept":                  {"application/json"},
		"X-Postmark-Server-Token": {p.token},
	}, req)
	if err != nil {
		return "", err
	}
	var a answer
	decodeErr := json.Unmarshal(ans.Body, &a)
	if ans.Status == http.StatusOK && a.ErrorCode == 0 {
		if ans.ReadErr != nil || decodeErr != nil || a.MessageID == "" {
			p.Log.LogAttrs(ctx, slog.LevelWarn, "postmark accepted a message without a readable MessageID")
		}
		return a.MessageID, nil
	}
	// Postmark's message may quote the recipient; the log is the operator's.
	p.Log.LogAttrs(ctx, slog.LevelWarn, "postmark refused a message",
		slog.Int("status", ans.Status), slog.Int("errorCode", a.ErrorCode), slog.String("message", a.Message))
	if ans.Status == http.StatusUnprocessableEntity && rejectCodes[a.ErrorCode] {
		return "", provider.Failf(provider.ErrRejected, nil, "postmark answered %d, ErrorCode %d", ans.Status, a.ErrorCode)
	}
	if a.ErrorCode != 0 {
		return "", provider.Failf(provider.ErrNotSent, nil, "postmark answered %d, ErrorCode %d", ans.Status, a.ErrorCode)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "postmark answered %d", ans.Status)
}
