// Package testinbound is the providers' side of Herald's inbound URLs in
// tests: each provider's signature of its webhooks, written out here from
// the provider's documentation apart from the verifiers of
// delivery/inbound, and a stand-in for Amazon SNS that signs with a
// certificate of its own.
package testinbound

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"hash"
	"math/big"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/standardwebhooks"
)

// TwilioSignature is the X-Twilio-Signature of form posted to rawURL: the
// base64 HMAC-SHA1, keyed by the auth token, of the URL followed by each
// parameter's name and value, sorted by name.
func TwilioSignature(authToken, rawURL string, form url.Values) string {
	s := rawURL
	for _, k := range sortedKeys(form) {
		for _, v := range form[k] {
			s += k + v
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SignSvix sets the svix-id, svix-timestamp and svix-signature headers of
// body, signed at at with secret (whsec_…), as Resend's webhooks carry
// them.
func SignSvix(tb testing.TB, h http.Header, secret, id string, at time.Time, body []byte) {
	tb.Helper()
	s, err := standardwebhooks.ParseSecret(secret)
	if err != nil {
		tb.Fatal(err)
	}
	h.Set("svix-id", id)
	h.Set("svix-timestamp", fmt.Sprint(at.Unix()))
	h.Set("svix-signature", s.Sign(id, at, body))
}

// ResendEvent is a Resend webhook body of type typ (email.delivered, …)
// on the email emailID; bounce, when not empty, is its bounce's type
// (Permanent, Transient), its subType General.
func ResendEvent(typ, emailID, bounce string) string {
	b := ""
	if bounce != "" {
		b = `,"bounce":{"message":"The recipient's mail server rejected it","subType":"General","type":"` + bounce + `"}`
	}
	return `{"type":"` + typ + `","created_at":"2026-11-27T12:00:00.000Z","data":{"email_id":"` + emailID +
		`","from":"noreply@herald.test","to":["ada@example.com"],"subject":"Welcome"` + b + `}}`
}

// SendGridSignature is the Event Webhook signature header of body sent
// with the timestamp header ts: the base64 ASN.1 ECDSA signature of the
// SHA-256 of ts followed by body.
func SendGridSignature(tb testing.TB, key *ecdsa.PrivateKey, ts, body string) string {
	tb.Helper()
	sum := sha256.Sum256([]byte(ts + body))
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// MailgunSignature is the signature of a Mailgun webhook: the hex
// HMAC-SHA256, keyed by the webhook signing key, of timestamp followed by
// token.
func MailgunSignature(signingKey, timestamp, token string) string {
	mac := hmac.New(sha256.New, []byte(signingKey))
	mac.Write([]byte(timestamp + token))
	return hex.EncodeToString(mac.Sum(nil))
}

// VonageSignature is the lower-case hex sig of a Vonage SMS API webhook
// of params (a sig among them is left out) with the signature secret, by
// method: "md5hash" (the account's default, the MD5 of the signed text
// followed by the secret) or the HMAC keyed by the secret, "md5",
// "sha1", "sha256" or "sha512". The signed text is each parameter sorted
// by name as "&name=value", any '&' or '=' of a value made '_'.
func VonageSignature(method, secret string, params url.Values) string {
	var b strings.Builder
	clean := strings.NewReplacer("&", "_", "=", "_")
	for _, k := range sortedKeys(params) {
		if k != "sig" {
			b.WriteString("&" + k + "=" + clean.Replace(params.Get(k)))
		}
	}
	if method == "md5hash" {
		sum := md5.Sum([]byte(b.String() + secret))
		return hex.EncodeToString(sum[:])
	}
	h := map[string]func() hash.Hash{"md5": md5.New, "sha1": sha1.New, "sha256": sha256.New, "sha512": sha512.New}[method]
	mac := hmac.New(h, []byte(secret))
	mac.Write([]byte(b.String()))
	return hex.EncodeToString(mac.Sum(nil))
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SNS stands in for Amazon SNS: it signs messages with a self-signed
// certificate of its own, which a test serves at the messages'
// SigningCertURL.
type SNS struct {
	Key     *rsa.PrivateKey
	Cert    *x509.Certificate
	CertPEM []byte
}

// NewSNS makes the key and the certificate (valid from an hour ago to an
// hour ahead).
func NewSNS(tb testing.TB) *SNS {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &SNS{Key: key, Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Sign sets m's Signature over SNS's documented string to sign (each
// signed field m holds, name and value on a line, in order) with m's
// SignatureVersion: "1" SHA1withRSA, any other SHA256withRSA. It returns
// m as the JSON body SNS posts.
func (s *SNS) Sign(tb testing.TB, m map[string]string) []byte {
	tb.Helper()
	fields := []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"}
	if m["Type"] != "Notification" {
		fields = []string{"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"}
	}
	var b strings.Builder
	for _, f := range fields {
		if v, ok := m[f]; ok {
			b.WriteString(f + "\n" + v + "\n")
		}
	}
	var sig []byte
	var err error
	if m["SignatureVersion"] == "1" {
		sum := sha1.Sum([]byte(b.String()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.Key, crypto.SHA1, sum[:])
	} else {
		sum := sha256.Sum256([]byte(b.String()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.Key, crypto.SHA256, sum[:])
	}
	if err != nil {
		tb.Fatal(err)
	}
	m["Signature"] = base64.StdEncoding.EncodeToString(sig)
	body, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}
