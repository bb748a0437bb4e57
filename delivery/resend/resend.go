// Package resend is the provider of the email-resend channel: Resend's
// REST API,
//
//	POST {apiBaseUrl}/emails
//
// with a JSON body (from, to, subject, html, text, reply_to, headers),
// Authorization: Bearer {apiKey}, and an Idempotency-Key (the send's key,
// or its SHA-256 when longer than Resend admits), so a retry of an
// unknown outcome is not sent twice. apiBaseUrl defaults to
// https://api.resend.com.
//
// Answers: 200 with the email's "id" is sent (the id Resend's webhooks
// name as data.email_id). Resend's error answer is
// {"statusCode","name","message"}: 400 and 422 refuse the message itself
// (ErrRejected), but for invalid_from_address, a fault of the channel's
// config; 401, 403, 404, 429 and 5xx prove nothing was sent (ErrNotSent),
// so another email channel may take the message; 409
// concurrent_idempotent_requests means another request with the same key
// is under way (ErrOutcomeUnknown).
package resend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/mail"
	"strings"
	"unicode"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Resend email channel.
const ChannelKey = "email-resend"

// DefaultBaseURL is Resend's API, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://api.resend.com"

// maxIdempotencyKey is the longest Idempotency-Key Resend admits.
const maxIdempotencyKey = 256

// Provider sends email through one Resend account. It is safe for
// concurrent use.
type Provider struct {
	endpoint string
	apiKey   string
	from     string
	client   *http.Client
	log      *slog.Logger
}

var _ provider.New = New

// New builds the provider from the fields apiKey (secret), fromEmail,
// fromName (optional) and apiBaseUrl (optional). webhookSecret, the
// signing secret of the channel's inbound events, is not the sender's.
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	p := &Provider{client: deps.HTTPClient, log: deps.Logger}
	var err error
	if p.apiKey, err = provider.ConfigString(config, "apiKey", true); err != nil {
		return nil, err
	}
	fromEmail, err := provider.ConfigString(config, "fromEmail", true)
	if err != nil {
		return nil, err
	}
	fromName, err := provider.ConfigString(config, "fromName", false)
	if err != nil {
		return nil, err
	}
	p.from = (&mail.Address{Name: fromName, Address: fromEmail}).String()
	if fromName == "" {
		p.from = fromEmail
	}
	base, err := provider.ConfigBaseURL(config, "apiBaseUrl", DefaultBaseURL)
	if err != nil {
		return nil, err
	}
	p.endpoint = base + "/emails"
	return p, nil
}

// email is the body of POST /emails.
type email struct {
	From    string            `json:"from"`
	To      []string          `json:"to"`
	Subject string            `json:"subject"`
	HTML    string            `json:"html,omitempty"`
	Text    string            `json:"text,omitempty"`
	ReplyTo string            `json:"reply_to,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// resendError is Resend's error answer.
type resendError struct {
	StatusCode int    `json:"statusCode"`
	Name       string `json:"name"`
	Message    string `json:"message"`
}

// IdempotencyKey is the Idempotency-Key of a send's key: the key itself,
// or the hex SHA-256 of a longer one.
func IdempotencyKey(key string) string {
	if len(key) <= maxIdempotencyKey {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Send sends m to m.To. The returned id is Resend's email id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.EmailContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Subject == "" {
		return "", provider.Failf(provider.ErrRejected, err, "email content has no subject")
	}
	e := email{From: p.from, To: []string{m.To}, Subject: c.Subject, ReplyTo: c.ReplyTo}
	e.HTML, e.Text = parts(c)
	if m.ListUnsubscribe != "" {
		e.Headers = map[string]string{"List-Unsubscribe": "<" + m.ListUnsubscribe + ">",
			"List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
	}
	body, err := json.Marshal(e)
	if err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "email content cannot be encoded")
	}
	header := http.Header{
		"Content-Type":  {"application/json"},
		"Authorization": {"Bearer " + p.apiKey},
	}
	if m.IdempotencyKey != "" {
		header.Set("Idempotency-Key", IdempotencyKey(m.IdempotencyKey))
	}
	ans, err := provider.Post(ctx, p.client, "resend", p.endpoint, header, body)
	if err != nil {
		return "", err
	}
	if ans.Status == http.StatusOK || ans.Status == http.StatusCreated {
		var ok struct {
			ID string `json:"id"`
		}
		if ans.Decode(&ok) != nil || ok.ID == "" {
			// Resend may have accepted it; a retry with the same
			// Idempotency-Key gets the first answer, not a second email.
			return "", provider.Failf(provider.ErrOutcomeUnknown, ans.ReadErr, "resend answered %d without a readable id", ans.Status)
		}
		return ok.ID, nil
	}
	var re resendError
	_ = json.Unmarshal(ans.Body, &re)
	// Resend's message may quote the recipient; the log is the operator's.
	p.log.LogAttrs(ctx, slog.LevelWarn, "resend refused an email",
		slog.Int("status", ans.Status), slog.String("name", re.Name), slog.String("message", re.Message))
	name := publicName(re.Name)
	switch {
	case ans.Status == http.StatusConflict && re.Name == "concurrent_idempotent_requests":
		return "", provider.Failf(provider.ErrOutcomeUnknown, nil, "resend answered %d, %s", ans.Status, name)
	case (ans.Status == http.StatusBadRequest || ans.Status == http.StatusUnprocessableEntity || ans.Status == http.StatusConflict) &&
		re.Name != "invalid_from_address":
		return "", provider.Failf(provider.ErrRejected, nil, "resend answered %d, %s", ans.Status, name)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "resend answered %d, %s", ans.Status, name)
}

// publicName is Resend's error name when it is one (lower case and
// underscores, bounded), else "error": nothing else of an answer reaches
// a tenant.
func publicName(n string) string {
	if n == "" || len(n) > 64 || strings.IndexFunc(n, func(r rune) bool { return r != '_' && !unicode.IsLower(r) }) >= 0 {
		return "error"
	}
	return n
}

// parts returns the HTML and text bodies of c: html and text as given;
// body alone is HTML when it starts with '<', else text (the rule of
// every email channel).
func parts(c wire.EmailContent) (html, text string) {
	html, text = c.HTML, c.Text
	if c.Body == "" {
		return html, text
	}
	if strings.HasPrefix(strings.TrimLeftFunc(c.Body, unicode.IsSpace), "<") {
		if html == "" {
			html = c.Body
		}
	} else if text == "" {
		text = c.Body
	}
	return html, text
}
