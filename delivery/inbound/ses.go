package inbound

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/events"
)

// snsHost is the host of an SNS endpoint, sns.<region>.amazonaws.com
// (.com.cn in China), the region shaped as AWS names them (eu-west-1,
// us-gov-west-1, cn-north-1): certificates and subscription
// confirmations are fetched from nowhere else. Any other Amazon host
// (sns.s3.amazonaws.com, a bucket's) may serve what its owner put there.
var snsHost = regexp.MustCompile(`^sns\.[a-z]{2}(-[a-z]+)+-[0-9]+\.amazonaws\.com(\.cn)?$`)

// TopicArnPattern is an SNS topic's ARN, the pattern of an email-ses
// channel's topicArn: partition, region, account, name (a FIFO topic's
// ends in .fifo).
const TopicArnPattern = `^arn:aws(-[a-z]+)*:sns:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$`

// AllowedSNSURL reports whether raw is an https URL of an SNS host, with
// no user info and no port: the only URLs a message may make Herald
// fetch (its SigningCertURL, its SubscribeURL). Anything else would let
// whoever holds an inbound URL make Herald call a host of their choice.
func AllowedSNSURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.User == nil && u.Port() == "" && snsHost.MatchString(u.Host)
}

// snsMessage is an SNS HTTP(S) delivery.
type snsMessage struct {
	Type             string `json:"Type"`
	MessageID        string `json:"MessageId"`
	Token            string `json:"Token"`
	TopicArn         string `json:"TopicArn"`
	Subject          string `json:"Subject"`
	Message          string `json:"Message"`
	SubscribeURL     string `json:"SubscribeURL"`
	Timestamp        string `json:"Timestamp"`
	SignatureVersion string `json:"SignatureVersion"`
	Signature        string `json:"Signature"`
	SigningCertURL   string `json:"SigningCertURL"`
}

// StringToSign is the text an SNS message's signature covers: its
// documented fields, each name and value on a line, in order, the absent
// optional ones (Subject) left out.
func (m snsMessage) StringToSign() string {
	var fields [][2]string
	if m.Type == "Notification" {
		fields = [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}}
		if m.Subject != "" {
			fields = append(fields, [2]string{"Subject", m.Subject})
		}
		fields = append(fields, [][2]string{{"Timestamp", m.Timestamp}, {"TopicArn", m.TopicArn}, {"Type", m.Type}}...)
	} else {
		fields = [][2]string{{"Message", m.Message}, {"MessageId", m.MessageID}, {"SubscribeURL", m.SubscribeURL},
			{"Timestamp", m.Timestamp}, {"Token", m.Token}, {"TopicArn", m.TopicArn}, {"Type", m.Type}}
	}
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f[0] + "\n" + f[1] + "\n")
	}
	return b.String()
}

// verifySES: SES publishes its events to an SNS topic whose HTTPS
// subscription is the inbound URL. The SNS message is verified with the
// certificate at its SigningCertURL (an allowed Amazon host only), RSA
// with SHA-1 (SignatureVersion 1) or SHA-256 (2). A SubscriptionConfirmation
// answers its SubscribeURL; a Notification holds an SES event (an
// event-publishing eventType, or a notificationType of the older
// feedback notifications), whose mail.messageId is the message SES
// answered at send. The SNS MessageId is the event id.
//
// Any AWS account can sign SNS messages of its own topics, and subscribe
// any URL to them: only the topic of the channel's topicArn is heard. A
// message of another topic, a subscription confirmation included, is
// refused before its certificate is fetched; so is every message of a
// channel without topicArn.
func verifySES(ctx context.Context, r Request, d Deps) (Result, error) {
	var m snsMessage
	topic := configString(r.Config, "topicArn")
	if json.Unmarshal(r.Body, &m) != nil || d.SNSCertificate == nil || !AllowedSNSURL(m.SigningCertURL) ||
		topic == "" || m.TopicArn != topic {
		return Result{}, ErrSignature
	}
	var hash crypto.Hash
	var digest []byte
	switch m.SignatureVersion {
	case "1":
		s := sha1.Sum([]byte(m.StringToSign()))
		hash, digest = crypto.SHA1, s[:]
	case "2":
		s := sha256.Sum256([]byte(m.StringToSign()))
		hash, digest = crypto.SHA256, s[:]
	default:
		return Result{}, ErrSignature
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return Result{}, ErrSignature
	}
	cert, err := d.SNSCertificate(ctx, m.SigningCertURL)
	if err != nil {
		return Result{}, ErrSignature
	}
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok || rsa.VerifyPKCS1v15(pub, hash, digest, sig) != nil {
		return Result{}, ErrSignature
	}
	switch m.Type {
	case "SubscriptionConfirmation":
		if !AllowedSNSURL(m.SubscribeURL) {
			return Result{}, ErrMalformed
		}
		return Result{Confirm: m.SubscribeURL}, nil
	case "Notification":
	default: // UnsubscribeConfirmation
		return Result{}, nil
	}
	var n struct {
		EventType        string `json:"eventType"`
		NotificationType string `json:"notificationType"`
		Mail             struct {
			MessageID string `json:"messageId"`
		} `json:"mail"`
		Bounce struct {
			BounceType    string `json:"bounceType"`
			BounceSubType string `json:"bounceSubType"`
		} `json:"bounce"`
	}
	if json.Unmarshal([]byte(m.Message), &n) != nil {
		return Result{}, ErrMalformed
	}
	typ := n.EventType
	if typ == "" {
		typ = n.NotificationType
	}
	return sesOutcomes.result(event{name: typ, id: m.MessageID, messageID: n.Mail.MessageID,
		hard: n.Bounce.BounceType == "Permanent", detail: n.Bounce.BounceSubType}), nil
}

// sesOutcomes are the SES event types (and notification types) that are
// outcomes (not Send, DeliveryDelay, Subscription).
var sesOutcomes = outcomes{
	"Delivery":          events.ReportDelivered,
	"Bounce":            events.ReportBounced,
	"Complaint":         events.ReportComplained,
	"Open":              events.ReportOpened,
	"Click":             events.ReportClicked,
	"Reject":            events.ReportFailed,
	"Rendering Failure": events.ReportFailed,
	"RenderingFailure":  events.ReportFailed,
}

// maxCertBytes bounds a fetched certificate.
const maxCertBytes = 64 << 10

// CertFetcher fetches SNS signing certificates over HTTPS from allowed
// Amazon hosts and keeps them (Amazon rotates them rarely, under new
// URLs). It follows no redirect. It is safe for concurrent use.
type CertFetcher struct {
	Client *http.Client
	mu     sync.Mutex
	certs  map[string]*x509.Certificate
}

// NewCertFetcher returns a fetcher whose requests time out after 10 s.
func NewCertFetcher() *CertFetcher {
	return &CertFetcher{Client: &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// maxCerts bounds the cache: past it, it starts afresh.
const maxCerts = 64

// Certificate returns the certificate at certURL, which must be
// AllowedSNSURL.
func (f *CertFetcher) Certificate(ctx context.Context, certURL string) (*x509.Certificate, error) {
	if !AllowedSNSURL(certURL) {
		return nil, errors.New("inbound: not an SNS certificate URL")
	}
	f.mu.Lock()
	c, ok := f.certs[certURL]
	f.mu.Unlock()
	if ok {
		return c, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, certURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("inbound: certificate answered %d", resp.StatusCode)
	}
	pemBytes, err := io.ReadAll(io.LimitReader(resp.Body, maxCertBytes))
	if err != nil {
		return nil, err
	}
	if c, err = ParseCertificate(pemBytes); err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.certs == nil || len(f.certs) >= maxCerts {
		f.certs = map[string]*x509.Certificate{}
	}
	f.certs[certURL] = c
	f.mu.Unlock()
	return c, nil
}

// Confirm GETs an SNS SubscribeURL (which must be AllowedSNSURL).
func (f *CertFetcher) Confirm(ctx context.Context, subscribeURL string) error {
	if !AllowedSNSURL(subscribeURL) {
		return errors.New("inbound: not an SNS subscribe URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, subscribeURL, nil)
	if err != nil {
		return err
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxCertBytes))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("inbound: subscription confirmation answered %d", resp.StatusCode)
	}
	return nil
}

// ParseCertificate reads the first PEM certificate of b.
func ParseCertificate(b []byte) (*x509.Certificate, error) {
	block, _ := pemDecode(b)
	if block == nil {
		return nil, errors.New("inbound: no PEM certificate")
	}
	return x509.ParseCertificate(block)
}
