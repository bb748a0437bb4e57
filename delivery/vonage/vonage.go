// Package vonage is the provider of the sms-vonage channel: Vonage's SMS
// API,
//
//	POST {apiBaseUrl}/sms/json
//	Content-Type: application/x-www-form-urlencoded
//	api_key, api_secret, from, to, text, type, client-ref
//
// apiBaseUrl defaults to https://rest.nexmo.com. to is the E.164 number
// without its '+'; type is "unicode" when the body holds a character
// outside ASCII (GSM-7 cannot carry it), else "text". signatureSecret is
// read by inbound delivery receipts, not here: requests carry api_secret.
//
// The SMS API takes no idempotency key: a retry of an unknown outcome may
// send twice. client-ref, which Vonage echoes in its delivery receipts,
// is a digest of the send's idempotency key, the same on every try. The
// returned id is the message's "message-id", which delivery receipts
// carry as messageId.
//
// Answers: the SMS API answers 200 with one status per message part
// ({"messages":[{"status","message-id","error-text"}]}); status "0" is
// sent. Statuses 2 (missing parameters), 3 (invalid parameters, an
// invalid to), 6 (an unroutable number), 7 (a barred number), 12 (too
// long), 22 (invalid network code) and 33 (a deactivated number, marked
// provider.ErrBadAddress too) refuse the message for good (ErrRejected);
// every other status (1 throttled, 4 invalid credentials, 5 internal
// error, 8 account barred, 9 no credit, 15 invalid sender, 29 a
// destination a trial account may not reach, …) and every other HTTP
// status (401, 429, 5xx) proves nothing was sent and is ErrNotSent, unless
// an earlier part of the same message was accepted: then the message is
// partly sent, and failing over would send that part twice (ErrRejected).
package vonage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Vonage SMS channel.
const ChannelKey = "sms-vonage"

// DefaultBaseURL is Vonage's SMS API, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://rest.nexmo.com"

// rejectStatuses are SMS API statuses that refuse the recipient or the
// message for good.
var rejectStatuses = map[string]bool{
	"2": true, "3": true, "6": true, "7": true, "12": true, "22": true, "33": true,
}

// badNumberStatus says the number is deactivated: no message will reach
// it (provider.ErrBadAddress).
const badNumberStatus = "33"

// Provider sends SMS through one Vonage account. It is safe for concurrent
// use.
type Provider struct {
	provider.HTTP
	apiKey, apiSecret string
	from              string
}

var _ provider.New = New

// New builds the provider from the fields apiKey, apiSecret (secret),
// from (a number or an alphanumeric sender id), signatureSecret (secret,
// optional) and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	p := &Provider{HTTP: provider.NewHTTP("vonage", "", deps),
		apiKey: f.String("apiKey", true), apiSecret: f.String("apiSecret", true), from: f.String("from", true)}
	f.String("signatureSecret", false)
	p.Endpoint = f.BaseURL("apiBaseUrl", DefaultBaseURL) + "/sms/json"
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

type answer struct {
	Messages []struct {
		Status    string `json:"status"`
		MessageID string `json:"message-id"`
		ErrorText string `json:"error-text"`
	} `json:"messages"`
}

// Send sends m's body to m.To. The returned id is the first part's
// message-id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.SMSContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "sms content has no body")
	}
	typ := "text"
	if strings.ContainsFunc(c.Body, func(r rune) bool { return r > 0x7e }) {
		typ = "unicode"
	}
	ref := sha256.Sum256([]byte(m.Tenant + "\x00" + m.IdempotencyKey))
	form := url.Values{
		"api_key": {p.apiKey}, "api_secret": {p.apiSecret}, "from": {p.from},
		"to": {strings.TrimPrefix(m.To, "+")}, "text": {c.Body}, "type": {typ},
		"client-ref": {hex.EncodeToString(ref[:16])},
	}
	ans, err := p.Post(ctx, http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"},
		"Accept":       {"application/json"},
	}, []byte(form.Encode()))
	if err != nil {
		return "", err
	}
	if ans.Status != http.StatusOK {
		p.Log.LogAttrs(ctx, slog.LevelWarn, "vonage did not take a message", slog.Int("status", ans.Status))
		return "", provider.Failf(provider.ErrNotSent, nil, "vonage answered %d", ans.Status)
	}
	var a answer
	if ans.Decode(&a) != nil || len(a.Messages) == 0 {
		// A 200 is the API's answer to every send, accepted or not: one
		// that cannot be read says nothing of the message.
		return "", provider.Failf(provider.ErrOutcomeUnknown, ans.ReadErr, "vonage answered 200 with an unreadable body")
	}
	first := a.Messages[0]
	accepted := false // a part went out: another channel would send it twice
	for _, part := range a.Messages {
		if part.Status == "0" {
			accepted = true
			continue
		}
		// Vonage's text may quote the number; the log is the operator's.
		p.Log.LogAttrs(ctx, slog.LevelWarn, "vonage refused a message",
			slog.String("status", part.Status), slog.String("error", part.ErrorText))
		st := publicStatus(part.Status)
		switch {
		case part.Status == badNumberStatus:
			return "", provider.Failf(provider.ErrRejected, provider.ErrBadAddress, "vonage status %s", st)
		case rejectStatuses[part.Status] || accepted:
			return "", provider.Failf(provider.ErrRejected, nil, "vonage status %s", st)
		}
		return "", provider.Failf(provider.ErrNotSent, nil, "vonage status %s", st)
	}
	return first.MessageID, nil
}

// publicStatus repeats a status of digits only.
func publicStatus(s string) string {
	if s == "" || len(s) > 4 || strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		return "unknown"
	}
	return s
}
