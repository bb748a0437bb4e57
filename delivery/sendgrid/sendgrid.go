// Package sendgrid is the provider of the email-sendgrid channel: Twilio
// SendGrid's v3 Mail Send API,
//
//	POST {apiBaseUrl}/v3/mail/send
//	Authorization: Bearer <apiKey>
//	Content-Type: application/json
//	{"personalizations":[{"to":[{"email"}]}],"from":{"email","name"},"reply_to":{…},
//	 "subject","content":[{"type":"text/plain","value"},{"type":"text/html","value"}],"headers":{…}}
//
// apiBaseUrl defaults to https://api.sendgrid.com (https://api.eu.sendgrid.com
// for an EU subuser). The bodies are the ones the SMTP provider would send
// (email.Bodies), plain text first as SendGrid requires; a one-click
// unsubscribe URL goes as the List-Unsubscribe and List-Unsubscribe-Post
// headers. webhookPublicKey is read by inbound events, not here.
//
// SendGrid documents no idempotency key for Mail Send: a retry of an
// unknown outcome may send twice. The returned id is the X-Message-Id
// header of the 202 answer; the Event Webhook's sg_message_id of the
// message starts with it ("<X-Message-Id>.recvd-…", on older mail
// "<X-Message-Id>.filter…").
//
// Answers: 202 is sent. 400 (a request SendGrid refuses: an invalid
// recipient or reply-to address, a missing subject or body; its
// {"errors":[{"message","field"}]}) and 413 (too large) refuse the message
// for good (ErrRejected); every other answer (401 a bad key, 403 a sender
// identity not verified or a key without the mail.send scope, 429, 5xx)
// proves nothing was sent and is ErrNotSent.
package sendgrid

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"regexp"
	"strings"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the SendGrid email channel.
const ChannelKey = "email-sendgrid"

// DefaultBaseURL is SendGrid's API, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://api.sendgrid.com"

// Provider sends email with one SendGrid API key. It is safe for
// concurrent use.
type Provider struct {
	provider.HTTP
	apiKey string
	from   address
}

var _ provider.New = New

// New builds the provider from the fields apiKey (secret), fromEmail,
// fromName, webhookPublicKey and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	p := &Provider{HTTP: provider.NewHTTP("sendgrid", "", deps), apiKey: f.String("apiKey", true)}
	f.From() // checks both fields, read below as SendGrid takes them
	p.from = address{Email: f.String("fromEmail", true), Name: f.String("fromName", false)}
	f.String("webhookPublicKey", false)
	p.Endpoint = f.BaseURL("apiBaseUrl", DefaultBaseURL) + "/v3/mail/send"
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

type address struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
}

type content struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

type personalization struct {
	To []address `json:"to"`
}

type request struct {
	Personalizations []personalization `json:"personalizations"`
	From             address           `json:"from"`
	ReplyTo          *address          `json:"reply_to,omitempty"`
	Subject          string            `json:"subject"`
	Content          []content         `json:"content"`
	Headers          map[string]string `json:"headers,omitempty"`
}

// sgErrors is SendGrid's error answer.
type sgErrors struct {
	Errors []struct {
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"errors"`
}

// Send sends m to m.To. The returned id is SendGrid's X-Message-Id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.EmailContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "sendgrid: the content is not email content")
	}
	req := request{Personalizations: []personalization{{To: []address{{Email: m.To}}}}, From: p.from, Subject: c.Subject}
	html, text := email.Bodies(c)
	if text != "" {
		req.Content = append(req.Content, content{"text/plain", text})
	}
	if html != "" {
		req.Content = append(req.Content, content{"text/html", html})
	}
	if c.ReplyTo != "" {
		a, err := mail.ParseAddress(c.ReplyTo)
		if err != nil {
			return "", provider.Failf(provider.ErrRejected, nil, "sendgrid: replyTo is not an address")
		}
		req.ReplyTo = &address{Email: a.Address, Name: a.Name}
	}
	if m.ListUnsubscribe != "" {
		req.Headers = map[string]string{"List-Unsubscribe": "<" + m.ListUnsubscribe + ">", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
	}
	ans, err := p.PostJSON(ctx, http.Header{"Authorization": {"Bearer " + p.apiKey}}, req)
	if err != nil {
		return "", err
	}
	if ans.Status == http.StatusAccepted || ans.Status == http.StatusOK {
		id := ans.Header.Get("X-Message-Id")
		if id == "" {
			p.Log.LogAttrs(ctx, slog.LevelWarn, "sendgrid accepted a message without an X-Message-Id")
		}
		return id, nil
	}
	var se sgErrors
	_ = json.Unmarshal(ans.Body, &se)
	var fields, texts []string
	for _, e := range se.Errors {
		fields, texts = append(fields, e.Field), append(texts, e.Message)
	}
	// SendGrid's messages may quote the recipient; the log is the operator's.
	p.Log.LogAttrs(ctx, slog.LevelWarn, "sendgrid refused a message", slog.Int("status", ans.Status),
		slog.String("fields", strings.Join(fields, ",")), slog.String("messages", strings.Join(texts, "; ")))
	public := fmt.Sprintf("sendgrid answered %d", ans.Status)
	if f := publicFields(fields); f != "" {
		public += " on " + f
	}
	return "", provider.Failf(provider.RefusalKind(ans.Status), nil, "%s", public)
}

// fieldName is the shape of a SendGrid error's field: a JSON path of the
// request ("personalizations.0.to.0.email").
var fieldName = regexp.MustCompile(`^[a-z_][a-z0-9_.]{0,63}$`)

// publicFields keeps the error fields fit for the tenant's eyes: paths of
// the request, never a value.
func publicFields(fields []string) string {
	var out []string
	for _, f := range fields {
		if fieldName.MatchString(f) {
			out = append(out, f)
		}
	}
	return strings.Join(out, ",")
}
