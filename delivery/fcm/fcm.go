// Package fcm is the provider of the push-fcm channel (CONTRACT.md §10):
// Firebase Cloud Messaging's HTTP v1 API,
//
//	POST {apiBaseUrl}/v1/projects/{project_id}/messages:send
//	Authorization: Bearer <OAuth2 access token>
//	{"message":{"token":"<device token>","notification":{"title","body"},"data":{…}}}
//
// apiBaseUrl defaults to https://fcm.googleapis.com. The access token comes
// from the service account's token_uri by the OAuth2 JWT-bearer grant (RFC
// 7523), signed with the account's private key, for the scope
// https://www.googleapis.com/auth/firebase.messaging; it is cached until it
// expires, and dropped when FCM answers 401.
//
// Answers: 200 {"name":"projects/…/messages/…"} is sent, and name is the id.
// FCM's error answer is a google.rpc.Status whose details carry an FcmError
// errorCode: UNREGISTERED (404) and INVALID_ARGUMENT (400) refuse the
// device token or the message for good (ErrRejected; a 404 UNREGISTERED
// is marked provider.ErrBadAddress too); every other answer
// (401 THIRD_PARTY_AUTH_ERROR, 403 SENDER_ID_MISMATCH, 429 QUOTA_EXCEEDED,
// 500 INTERNAL, 503 UNAVAILABLE) and a failed token request prove nothing was
// sent (ErrNotSent).
package fcm

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/egress"
)

// ChannelKey is the catalog key of the FCM push channel.
const ChannelKey = "push-fcm"

// DefaultBaseURL is FCM's API host, used when apiBaseUrl is not set.
const DefaultBaseURL = "https://fcm.googleapis.com"

// Scope is the OAuth2 scope of FCM's HTTP v1 API.
const Scope = "https://www.googleapis.com/auth/firebase.messaging"

// defaultTokenURI is Google's token endpoint, for a service account JSON
// without token_uri.
const defaultTokenURI = "https://oauth2.googleapis.com/token"

// Provider sends push notifications with one service account. It is safe
// for concurrent use.
type Provider struct {
	endpoint string
	jwt      *jwt.Config
	client   *http.Client
	log      *slog.Logger

	mu    sync.Mutex
	token *oauth2.Token // nil until fetched; dropped on a 401
}

var _ provider.New = New

// serviceAccount is the part of a Google service account key file the
// provider reads.
type serviceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
}

// New builds the provider from the fields serviceAccountJson (secret: a
// Google service account key file, its token_uri honoured) and apiBaseUrl
// (optional). Its errors name the field, never a value of the key file.
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	raw, err := provider.ConfigString(config, "serviceAccountJson", true)
	if err != nil {
		return nil, err
	}
	var sa serviceAccount
	if err := json.Unmarshal([]byte(raw), &sa); err != nil {
		return nil, errors.New("serviceAccountJson: not a JSON object")
	}
	var bad []error
	if sa.Type != "" && sa.Type != "service_account" {
		bad = append(bad, errors.New("serviceAccountJson: type is not service_account"))
	}
	if sa.ProjectID == "" || strings.ContainsAny(sa.ProjectID, "/?#%") {
		bad = append(bad, errors.New("serviceAccountJson: project_id missing or malformed"))
	}
	if sa.ClientEmail == "" {
		bad = append(bad, errors.New("serviceAccountJson: client_email missing"))
	}
	if !parsesAsKey(sa.PrivateKey) {
		bad = append(bad, errors.New("serviceAccountJson: private_key is not a PEM RSA key"))
	}
	if sa.TokenURI == "" {
		sa.TokenURI = defaultTokenURI
	}
	if u, err := url.Parse(sa.TokenURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		bad = append(bad, errors.New("serviceAccountJson: token_uri is not an http(s) URL"))
	}
	base, err := provider.ConfigBaseURL(config, "apiBaseUrl", DefaultBaseURL)
	if err != nil {
		bad = append(bad, err)
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	return &Provider{
		endpoint: base + "/v1/projects/" + sa.ProjectID + "/messages:send",
		jwt: &jwt.Config{
			Email:        sa.ClientEmail,
			PrivateKey:   []byte(sa.PrivateKey),
			PrivateKeyID: sa.PrivateKeyID,
			Scopes:       []string{Scope},
			TokenURL:     sa.TokenURI,
		},
		client: deps.HTTPClient,
		log:    deps.Logger,
	}, nil
}

// parsesAsKey reports whether s is a PEM RSA private key (PKCS #8 or #1),
// as the JWT signer will read it.
func parsesAsKey(s string) bool {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return false
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return true
	}
	_, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	return err == nil
}

// ctxTransport gives every request the send's context: the JWT token
// source posts without one, and the send's deadline and cancellation must
// bound the token request too.
type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t ctxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(req.WithContext(t.ctx))
}

// accessToken returns the cached access token, or fetches one from the
// token_uri within ctx. Concurrent callers wait for one fetch.
func (p *Provider) accessToken(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token.Valid() {
		return p.token.AccessToken, nil
	}
	if err := ctx.Err(); err != nil {
		return "", provider.Failf(provider.ErrNotSent, err, "fcm access token not requested")
	}
	base := p.client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := &http.Client{Transport: ctxTransport{ctx, base}, CheckRedirect: p.client.CheckRedirect, Timeout: p.client.Timeout}
	tok, err := p.jwt.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc)).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// The endpoint's body is not repeated: only its status and
			// RFC 6749 error code.
			p.log.LogAttrs(ctx, slog.LevelWarn, "fcm token endpoint refused the service account",
				slog.Int("status", re.Response.StatusCode), slog.String("error", re.ErrorCode))
			return "", provider.Failf(provider.ErrNotSent, nil, "fcm token endpoint answered %d", re.Response.StatusCode)
		}
		// x/oauth2 flattens transport errors into text; keep the context's.
		p.log.LogAttrs(ctx, slog.LevelWarn, "fcm access token request failed", slog.String("error", egress.LogText(err)))
		return "", provider.Failf(provider.ErrNotSent, ctx.Err(), "fcm access token request failed")
	}
	if tok.AccessToken == "" {
		return "", provider.Failf(provider.ErrNotSent, nil, "fcm token endpoint gave no access token")
	}
	p.token = tok
	return tok.AccessToken, nil
}

// dropToken forgets the access token FCM refused.
func (p *Provider) dropToken(refused string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token != nil && p.token.AccessToken == refused {
		p.token = nil
	}
}

type notification struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

type message struct {
	Token        string            `json:"token"`
	Notification notification      `json:"notification"`
	Data         map[string]string `json:"data,omitempty"`
}

// rpcStatus is FCM's error answer.
type rpcStatus struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type      string `json:"@type"`
			ErrorCode string `json:"errorCode"`
		} `json:"details"`
	} `json:"error"`
}

// errorCode is the FcmError errorCode of an answer, else its status.
func (s rpcStatus) errorCode() string {
	for _, d := range s.Error.Details {
		if strings.HasSuffix(d.Type, "google.firebase.fcm.v1.FcmError") && d.ErrorCode != "" {
			return d.ErrorCode
		}
	}
	return s.Error.Status
}

// Send sends m to the device token m.To. The returned id is FCM's message
// name.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.PushContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Title == "" || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "push content needs a title and a body")
	}
	b, err := json.Marshal(map[string]message{"message": {
		Token: m.To, Notification: notification{Title: c.Title, Body: c.Body}, Data: c.Data,
	}})
	if err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "push content cannot be encoded")
	}
	token, err := p.accessToken(ctx)
	if err != nil {
		return "", err
	}
	ans, err := provider.Post(ctx, p.client, "fcm", p.endpoint, http.Header{
		"Content-Type":  {"application/json; charset=utf-8"},
		"Authorization": {"Bearer " + token},
	}, b)
	if err != nil {
		return "", err
	}
	status := ans.Status
	if status == http.StatusOK {
		var ok struct {
			Name string `json:"name"`
		}
		if ans.Decode(&ok) != nil {
			p.log.LogAttrs(ctx, slog.LevelWarn, "fcm accepted a message without a readable name")
		}
		return ok.Name, nil
	}
	var st rpcStatus
	_ = json.Unmarshal(ans.Body, &st)
	code := st.errorCode()
	p.log.LogAttrs(ctx, slog.LevelWarn, "fcm refused a message",
		slog.Int("status", status), slog.String("errorCode", code), slog.String("message", st.Error.Message))
	if status == http.StatusUnauthorized {
		p.dropToken(token)
	}
	public := fmt.Sprintf("fcm answered %d", status)
	if publicCode(code) {
		public += " " + code
	}
	if status == http.StatusNotFound && code == "UNREGISTERED" {
		// The token was valid once and is no more (the app was removed):
		// no message will ever reach it.
		return "", provider.Failf(provider.ErrRejected, provider.ErrBadAddress, "%s", public)
	}
	if (status == http.StatusNotFound || status == http.StatusBadRequest) &&
		(code == "UNREGISTERED" || code == "INVALID_ARGUMENT") {
		return "", provider.Failf(provider.ErrRejected, nil, "%s", public)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "%s", public)
}

// publicCode reports whether code looks like an FCM error code
// (UPPER_SNAKE), fit to repeat to the tenant.
func publicCode(code string) bool {
	if code == "" || len(code) > 64 {
		return false
	}
	for _, r := range code {
		if (r < 'A' || r > 'Z') && r != '_' {
			return false
		}
	}
	return true
}
