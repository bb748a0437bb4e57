// Package expo is the provider of the push-expo channel: the Expo push
// service,
//
//	POST {apiBaseUrl}/--/api/v2/push/send
//	Authorization: Bearer <accessToken>   (when set: push security enabled)
//	Content-Type: application/json
//	[{"to":"ExponentPushToken[…]","title","body","data"}]
//
// apiBaseUrl defaults to https://exp.host. The address is the device's
// Expo push token.
//
// The push API takes no idempotency key: a retry of an unknown outcome may
// push twice. The returned id is the push ticket's id, with which Expo's
// push receipts (/--/api/v2/push/getReceipts) say what became of it.
//
// Answers: 200 {"data":[{"status":"ok","id"}]} is sent. A ticket
// {"status":"error","details":{"error"}} with DeviceNotRegistered (the
// token is no longer, or never was, a device's: ErrRejected marked
// provider.ErrBadAddress) or MessageTooBig (ErrRejected) refuses the
// message for good; its other errors (MessageRateExceeded,
// MismatchSenderId, InvalidCredentials) prove nothing was sent
// (ErrNotSent). A request error {"errors":[{"code","message"}]} is
// ErrRejected when 400 (VALIDATION_ERROR: a malformed request or token)
// and ErrNotSent otherwise (401 a bad access token, 429, 5xx).
package expo

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the Expo push channel.
const ChannelKey = "push-expo"

// DefaultBaseURL is Expo's push API host, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://exp.host"

// Provider sends push notifications through Expo with one access token,
// or none. It is safe for concurrent use.
type Provider struct {
	provider.HTTP
	token string // "" when the project needs none
}

var _ provider.New = New

// New builds the provider from the fields accessToken (secret, optional)
// and apiBaseUrl (optional).
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	f := provider.ReadFields(config)
	p := &Provider{token: f.String("accessToken", false), HTTP: provider.NewHTTP("expo", f.BaseURL("apiBaseUrl", DefaultBaseURL)+"/--/api/v2/push/send", deps)}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

type pushMessage struct {
	To    string            `json:"to"`
	Title string            `json:"title"`
	Body  string            `json:"body"`
	Data  map[string]string `json:"data,omitempty"`
}

type ticket struct {
	Status  string `json:"status"`
	ID      string `json:"id"`
	Message string `json:"message"`
	Details struct {
		Error string `json:"error"`
	} `json:"details"`
}

type answer struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Send pushes m to the Expo push token m.To. The returned id is the push
// ticket's id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.PushContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Title == "" || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "push content needs a title and a body")
	}
	header := http.Header{"Accept": {"application/json"}}
	if p.token != "" {
		header.Set("Authorization", "Bearer "+p.token)
	}
	ans, err := p.PostJSON(ctx, header, []pushMessage{{To: m.To, Title: c.Title, Body: c.Body, Data: c.Data}})
	if err != nil {
		return "", err
	}
	var a answer
	decodeErr := json.Unmarshal(ans.Body, &a)
	if ans.Status != http.StatusOK {
		code := ""
		if len(a.Errors) > 0 {
			code = a.Errors[0].Code
			p.Log.LogAttrs(ctx, slog.LevelWarn, "expo refused a request", slog.Int("status", ans.Status),
				slog.String("code", code), slog.String("message", a.Errors[0].Message))
		} else {
			p.Log.LogAttrs(ctx, slog.LevelWarn, "expo refused a request", slog.Int("status", ans.Status))
		}
		kind := provider.ErrNotSent
		if ans.Status == http.StatusBadRequest {
			kind = provider.ErrRejected
		}
		if publicCode(code) {
			return "", provider.Failf(kind, nil, "expo answered %d %s", ans.Status, code)
		}
		return "", provider.Failf(kind, nil, "expo answered %d", ans.Status)
	}
	var tickets []ticket
	if ans.ReadErr != nil || decodeErr != nil || json.Unmarshal(a.Data, &tickets) != nil || len(tickets) != 1 {
		var one ticket // a single message is answered with one ticket, not a list
		if ans.ReadErr != nil || decodeErr != nil || json.Unmarshal(a.Data, &one) != nil || one.Status == "" {
			return "", provider.Failf(provider.ErrOutcomeUnknown, ans.ReadErr, "expo answered 200 with an unreadable body")
		}
		tickets = []ticket{one}
	}
	t := tickets[0]
	if t.Status == "ok" {
		return t.ID, nil
	}
	code := t.Details.Error
	// Expo's message quotes the token; the log is the operator's.
	p.Log.LogAttrs(ctx, slog.LevelWarn, "expo refused a message", slog.String("error", code), slog.String("message", t.Message))
	public := "expo ticket error"
	if publicCode(code) {
		public += " " + code
	}
	switch code {
	case "DeviceNotRegistered":
		return "", provider.Failf(provider.ErrRejected, provider.ErrBadAddress, "%s", public)
	case "MessageTooBig":
		return "", provider.Failf(provider.ErrRejected, nil, "%s", public)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "%s", public)
}

// publicCode reports whether code looks like one of Expo's error codes
// (letters and underscores), fit to repeat to the tenant.
func publicCode(code string) bool {
	return code != "" && len(code) <= 64 && !strings.ContainsFunc(code, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
}
