// Package standardwebhooks signs outbound webhooks as Standard Webhooks
// (https://www.standardwebhooks.com, CONTRACT.md §14) does: three headers,
//
//	webhook-id: <id, the same on every retry of one message>
//	webhook-timestamp: <unix seconds>
//	webhook-signature: v1,<base64 of HMAC-SHA256 of "{id}.{timestamp}.{body}">
//
// keyed by the base64-decoded part of a secret "whsec_<base64>". Any
// receiver library of the standard verifies what it signs. It is a leaf:
// it knows nothing of channels, runs or HTTP clients.
package standardwebhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The header names of the standard.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret.
const SecretPrefix = "whsec_"

// ErrBadSecret: a secret is not "whsec_" followed by standard base64 of at
// least one byte. The error never holds the secret.
var ErrBadSecret = errors.New("standardwebhooks: the secret is not whsec_<base64>")

// Secret is a parsed signing key. Its zero value is not usable; get one
// from ParseSecret. It is safe for concurrent use.
type Secret struct {
	key []byte
}

// ParseSecret parses "whsec_<base64>" into a Secret, or fails with
// ErrBadSecret.
func ParseSecret(s string) (Secret, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return Secret{}, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return Secret{}, ErrBadSecret
	}
	return Secret{key: key}, nil
}

// Sign returns the webhook-signature value of body sent as message id at
// ts: "v1," and the base64 HMAC-SHA256 of "{id}.{unix seconds}.{body}".
func (s Secret) Sign(id string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SetHeaders sets the three headers of body sent as message id at ts on h.
func (s Secret) SetHeaders(h http.Header, id string, ts time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, s.Sign(id, ts, body))
}

// Tolerance is how far a signed timestamp may be from now for Verify: the
// standard's five minutes, so a captured message cannot be replayed later.
const Tolerance = 5 * time.Minute

// ErrBadSignature: Verify refused a message. The error says nothing of
// the key.
var ErrBadSignature = errors.New("standardwebhooks: the signature does not verify")

// Verify checks a message received with its three header values (from the
// webhook- headers, or Svix's svix- headers, which carry the same): the
// timestamp within Tolerance of now, and one of the space-separated
// "v1,<base64>" signatures of signature matching body. Anything else is
// ErrBadSignature.
func (s Secret) Verify(id, timestamp, signature string, body []byte, now time.Time) error {
	if id == "" || len(s.key) == 0 {
		return ErrBadSignature
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	ts := time.Unix(sec, 0)
	if ts.Before(now.Add(-Tolerance)) || ts.After(now.Add(Tolerance)) {
		return ErrBadSignature
	}
	want := []byte(s.Sign(id, ts, body))
	for _, sig := range strings.Fields(signature) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrBadSignature
}
