// Package twilio is the provider of the sms-twilio channel (CONTRACT.md
// §10): Twilio's Programmable Messaging REST API,
//
//	POST {apiBaseUrl}/2010-04-01/Accounts/{accountSid}/Messages.json
//
// with a form body (To, From or MessagingServiceSid, Body) and HTTP basic
// auth (account SID, auth token). apiBaseUrl defaults to
// https://api.twilio.com.
//
// Answers: 201 with the message's "sid" is sent. Twilio's error answer is
// {"code","message","more_info","status"}: the codes that refuse the
// recipient (21211 invalid To, 21214 and 21612 unreachable, 21217 invalid
// number, 21610 unsubscribed, 21614 not SMS-capable) and the message itself
// (21602 no body, 21617 body too long) are ErrRejected (21211, 21217 and
// 21614 also provider.ErrBadAddress); every other error
// answer (401 20003 bad credentials, 429 20429 too many requests, 5xx, a
// From number or region the account may not use) proves nothing was sent
// and is ErrNotSent, so another sms channel may take the message.
package twilio

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Twilio SMS channel.
const ChannelKey = "sms-twilio"

// DefaultBaseURL is Twilio's API, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://api.twilio.com"

// rejectCodes are Twilio error codes that refuse the recipient or the
// message for good.
var rejectCodes = map[int]bool{
	21211: true, // invalid 'To' phone number
	21214: true, // 'To' phone number cannot be reached
	21217: true, // phone number does not appear to be valid
	21610: true, // the recipient unsubscribed from this sender
	21612: true, // 'To' number is not currently reachable
	21614: true, // 'To' number is not a valid mobile number
	21602: true, // message body is required
	21617: true, // message body exceeds the length limit
}

// badNumberCodes are the rejectCodes that say the 'To' number does not
// exist as an SMS destination (provider.ErrBadAddress): 21211 invalid
// number, 21217 not a valid number, 21614 not a mobile number. The
// others (unreachable for now, unsubscribed, a bad body) are not.
var badNumberCodes = map[int]bool{21211: true, 21217: true, 21614: true}

// Provider sends SMS through one Twilio account. It is safe for concurrent
// use.
type Provider struct {
	provider.HTTP
	accountSID string
	authToken  string
	from       string
}

var _ provider.New = New

// New builds the provider from the fields accountSid, authToken (secret),
// from (an E.164 number or sender id, or a Messaging Service SID "MG…")
// and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	p := &Provider{HTTP: provider.NewHTTP("twilio", "", deps), accountSID: f.String("accountSid", true)}
	if strings.ContainsAny(p.accountSID, "/?#%") {
		f.Fail(fmt.Errorf("accountSid: not an account SID"))
	}
	p.authToken, p.from = f.String("authToken", true), f.String("from", true)
	p.Endpoint = f.BaseURL("apiBaseUrl", DefaultBaseURL) + "/2010-04-01/Accounts/" + p.accountSID + "/Messages.json"
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// twilioError is Twilio's error answer.
type twilioError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// Send sends m's body to m.To. The returned id is Twilio's message SID.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.SMSContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "sms content has no body")
	}
	form := url.Values{"To": {m.To}, "Body": {c.Body}}
	if strings.HasPrefix(p.from, "MG") {
		form.Set("MessagingServiceSid", p.from)
	} else {
		form.Set("From", p.from)
	}
	ans, err := p.Post(ctx, http.Header{
		"Content-Type":  {"application/x-www-form-urlencoded"},
		"Accept":        {"application/json"},
		"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(p.accountSID+":"+p.authToken))},
	}, []byte(form.Encode()))
	if err != nil {
		return "", err
	}
	status := ans.Status
	if status == http.StatusCreated || status == http.StatusOK {
		var ok struct {
			SID string `json:"sid"`
		}
		if ans.Decode(&ok) != nil || ok.SID == "" {
			// Twilio accepted the message; only its answer is unreadable.
			p.Log.LogAttrs(ctx, slog.LevelWarn, "twilio accepted a message without a readable sid",
				slog.Int("status", status))
		}
		return ok.SID, nil
	}
	var te twilioError
	_ = json.Unmarshal(ans.Body, &te)
	// Twilio's message may quote the recipient; the log is the operator's.
	p.Log.LogAttrs(ctx, slog.LevelWarn, "twilio refused a message",
		slog.Int("status", status), slog.Int("code", te.Code), slog.String("message", te.Message))
	if status >= 400 && status < 500 && badNumberCodes[te.Code] {
		return "", provider.Failf(provider.ErrRejected, provider.ErrBadAddress, "twilio answered %d, error %d", status, te.Code)
	}
	if status >= 400 && status < 500 && rejectCodes[te.Code] {
		return "", provider.Failf(provider.ErrRejected, nil, "twilio answered %d, error %d", status, te.Code)
	}
	if te.Code != 0 {
		return "", provider.Failf(provider.ErrNotSent, nil, "twilio answered %d, error %d", status, te.Code)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "twilio answered %d", status)
}
