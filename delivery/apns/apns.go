// Package apns is the provider of the push-apns channel: Apple Push
// Notification service's provider API over HTTP/2 with token-based
// authentication,
//
//	POST {apiBaseUrl}/3/device/{device token}
//	authorization: bearer <JWT, ES256, signed with the .p8 key>
//	apns-topic: <topic>   apns-push-type: alert   apns-priority: 10
//	apns-id: <UUID>       apns-collapse-id: <digest>
//	{"aps":{"alert":{"title","body"},"sound":"default"},<data keys>}
//
// apiBaseUrl defaults to https://api.push.apple.com when production is
// true, else to the development server https://api.sandbox.push.apple.com
// (a device token of a development build is valid only there). The
// standard library's transport speaks HTTP/2 to APNs: delivery's egress
// transport attempts HTTP/2 and APNs offers nothing else over TLS.
//
// The provider token is a JWT with header {"alg":"ES256","kid":keyId} and
// claims {"iss":teamId,"iat":<now>}, signed with the account's .p8 key
// (privateKey, PEM or its base64 body). Apple refuses a token older than
// an hour and one renewed more often than every 20 minutes: it is kept
// for 50 minutes, and made anew early only when APNs answers
// ExpiredProviderToken.
//
// APNs has no idempotency key. Every try of one send carries the same
// apns-id (a UUID derived from the tenant and the idempotency key), which
// APNs echoes as the message's id, and the same apns-collapse-id, so a
// retry of an unknown outcome that reached the device replaces the first
// notification there instead of showing a second.
//
// Answers: 200 is sent; the id is the apns-id. An error answer is
// {"reason"}: 410 (Unregistered, ExpiredToken: ErrRejected marked
// provider.ErrBadAddress), 413 (PayloadTooLarge) and 400 (BadDeviceToken,
// DeviceTokenNotForTopic, a request APNs refuses) refuse the message for
// good, except the 400s that blame the channel's config (BadTopic,
// MissingTopic, TopicDisallowed, BadCertificate…), which are ErrNotSent
// with 403 (a bad or expired provider token), 404, 405, 429, 500 and
// 503.
package apns

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/provider"
)

// ChannelKey is the catalog key of the APNs push channel.
const ChannelKey = "push-apns"

// The APNs servers, used when apiBaseUrl is not set.
const (
	ProductionBaseURL  = "https://api.push.apple.com"
	DevelopmentBaseURL = "https://api.sandbox.push.apple.com"
)

// tokenLifetime is how long a provider token is used: Apple accepts one
// for an hour and refuses renewals more often than every 20 minutes.
const tokenLifetime = 50 * time.Minute

// Provider sends push notifications with one .p8 key to one app (topic).
// It is safe for concurrent use.
type Provider struct {
	base   string
	teamID string
	keyID  string
	topic  string
	key    *ecdsa.PrivateKey
	client *http.Client
	log    *slog.Logger
	now    func() time.Time

	mu       sync.Mutex
	token    string // "" until made
	tokenIat time.Time
}

var _ provider.New = New

// New builds the provider from the fields teamId, keyId, privateKey
// (secret: the .p8 key), topic (the app's bundle id), production
// (optional, false: the development server) and apiBaseUrl (optional).
// Its errors name the field, never a value of the key.
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	p := &Provider{client: deps.HTTPClient, log: deps.Logger, now: deps.Now}
	var bad []error
	var err error
	for _, f := range []struct {
		name string
		to   *string
	}{{"teamId", &p.teamID}, {"keyId", &p.keyID}, {"topic", &p.topic}} {
		if *f.to, err = provider.ConfigString(config, f.name, true); err != nil {
			bad = append(bad, err)
		}
	}
	raw, err := provider.ConfigString(config, "privateKey", true)
	if err != nil {
		bad = append(bad, err)
	} else if p.key, err = parseKey(raw); err != nil {
		bad = append(bad, err)
	}
	production := false
	if v, ok := config["production"]; ok && v != nil {
		if production, ok = v.(bool); !ok {
			bad = append(bad, errors.New("production: want a boolean"))
		}
	}
	def := DevelopmentBaseURL
	if production {
		def = ProductionBaseURL
	}
	if p.base, err = provider.ConfigBaseURL(config, "apiBaseUrl", def); err != nil {
		bad = append(bad, err)
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// parseKey reads a .p8 key: a PEM PKCS #8 P-256 private key, or the base64
// body of one.
func parseKey(raw string) (*ecdsa.PrivateKey, error) {
	der := []byte(nil)
	if block, _ := pem.Decode([]byte(raw)); block != nil {
		der = block.Bytes
	} else if b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(raw), "")); err == nil {
		der = b
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("privateKey: not a .p8 key (PKCS #8)")
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("privateKey: not a P-256 key")
	}
	return ek, nil
}

// providerToken returns the cached provider token, or signs a new one.
func (p *Provider) providerToken() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.token != "" && now.Sub(p.tokenIat) < tokenLifetime && !now.Before(p.tokenIat) {
		return p.token, nil
	}
	head, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": p.keyID})
	claims, _ := json.Marshal(map[string]any{"iss": p.teamID, "iat": now.Unix()})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(head) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, p.key, sum[:])
	if err != nil {
		return "", provider.Failf(provider.ErrNotSent, err, "apns provider token not signed")
	}
	sig := make([]byte, 64) // JWS ES256: r and s, 32 bytes each
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	p.token, p.tokenIat = signing+"."+enc.EncodeToString(sig), now
	return p.token, nil
}

// dropToken forgets the provider token APNs called expired.
func (p *Provider) dropToken(refused string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.token == refused {
		p.token = ""
	}
}

// ids are the apns-id and apns-collapse-id of every try of one send.
func ids(tenant, idempotencyKey string) (apnsID, collapseID string) {
	sum := sha256.Sum256([]byte(tenant + "\x00" + idempotencyKey))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80 // RFC 9562 version 8: a name-derived UUID of our own
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], hex.EncodeToString(sum[16:32])
}

// configReasons are 400 reasons that blame the channel's config, not the
// message: another push channel may do better.
var configReasons = map[string]bool{
	"BadTopic": true, "MissingTopic": true, "TopicDisallowed": true,
	"BadCertificate": true, "BadCertificateEnvironment": true, "MissingProviderToken": true,
}

// Send pushes m to the device token m.To. The returned id is the apns-id.
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var c wire.PushContent
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Title == "" || c.Body == "" {
		return "", provider.Failf(provider.ErrRejected, err, "push content needs a title and a body")
	}
	if m.To == "" || strings.ContainsFunc(m.To, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
	}) {
		return "", provider.Failf(provider.ErrRejected, nil, "apns device token is not hexadecimal")
	}
	payload := map[string]any{}
	for k, v := range c.Data {
		payload[k] = v
	}
	payload["aps"] = map[string]any{"alert": map[string]string{"title": c.Title, "body": c.Body}, "sound": "default"}
	b, err := json.Marshal(payload)
	if err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "push content cannot be encoded")
	}
	token, err := p.providerToken()
	if err != nil {
		return "", err
	}
	apnsID, collapseID := ids(m.Tenant, m.IdempotencyKey)
	ans, err := provider.Post(ctx, p.client, "apns", p.base+"/3/device/"+m.To, http.Header{
		"Authorization":    {"bearer " + token},
		"Content-Type":     {"application/json"},
		"Apns-Topic":       {p.topic},
		"Apns-Push-Type":   {"alert"},
		"Apns-Priority":    {"10"},
		"Apns-Id":          {apnsID},
		"Apns-Collapse-Id": {collapseID},
	}, b)
	if err != nil {
		return "", err
	}
	if ans.Status == http.StatusOK {
		if id := ans.Header.Get("Apns-Id"); id != "" {
			return id, nil
		}
		return apnsID, nil
	}
	var e struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(ans.Body, &e)
	p.log.LogAttrs(ctx, slog.LevelWarn, "apns refused a notification", slog.Int("status", ans.Status), slog.String("reason", e.Reason))
	if e.Reason == "ExpiredProviderToken" {
		p.dropToken(token)
	}
	public := fmt.Sprintf("apns answered %d", ans.Status)
	if publicReason(e.Reason) {
		public += " " + e.Reason
	}
	switch {
	case ans.Status == http.StatusGone:
		// The token was a device's and is no more (the app was removed).
		return "", provider.Failf(provider.ErrRejected, provider.ErrBadAddress, "%s", public)
	case ans.Status == http.StatusRequestEntityTooLarge,
		ans.Status == http.StatusBadRequest && !configReasons[e.Reason]:
		return "", provider.Failf(provider.ErrRejected, nil, "%s", public)
	}
	return "", provider.Failf(provider.ErrNotSent, nil, "%s", public)
}

// publicReason reports whether reason looks like an APNs reason
// (letters only), fit to repeat to the tenant.
func publicReason(reason string) bool {
	return reason != "" && len(reason) <= 64 && !strings.ContainsFunc(reason, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}
