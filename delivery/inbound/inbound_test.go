package inbound_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/internal/testinbound"
	"github.com/heraldhq/herald/secrets"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// want is what one case must map to: the reports'
// "status/bounce@message#event", then "(detail)" when the report has one.
type verifyCase struct {
	name string
	req  inbound.Request
	want []string // nil: no report; "ERR:signature" / "ERR:malformed"
}

func summary(res inbound.Result) []string {
	var out []string
	for _, r := range res.Reports {
		s := r.Status
		if r.Bounce != "" {
			s += "/" + r.Bounce
		}
		s += "@" + r.MessageID + "#" + r.EventID
		if r.Detail != "" {
			s += "(" + r.Detail + ")"
		}
		out = append(out, s)
	}
	if res.Confirm != "" {
		out = append(out, "confirm "+res.Confirm)
	}
	if res.Once != "" {
		out = append(out, "once "+res.Once)
	}
	return out
}

func run(t *testing.T, channelKey string, d inbound.Deps, cases []verifyCase) {
	t.Helper()
	v, ok := inbound.For(channelKey)
	if !ok {
		t.Fatalf("no verifier for %s", channelKey)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.req.Now.IsZero() {
				c.req.Now = now
			}
			if c.req.Header == nil {
				c.req.Header = http.Header{}
			}
			res, err := v(context.Background(), c.req, d)
			var got []string
			switch {
			case errors.Is(err, inbound.ErrSignature):
				got = []string{"ERR:signature"}
			case errors.Is(err, inbound.ErrMalformed):
				got = []string{"ERR:malformed"}
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			default:
				got = summary(res)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

const inURL = "https://herald.example/in/tok"

func TestTwilio(t *testing.T) {
	cfg := map[string]any{"authToken": "tw-secret"}
	signed := func(form url.Values) inbound.Request {
		h := http.Header{}
		h.Set("X-Twilio-Signature", testinbound.TwilioSignature("tw-secret", inURL, form))
		return inbound.Request{URL: inURL, Header: h, Body: []byte(form.Encode()), Config: cfg}
	}
	form := func(status string) url.Values {
		return url.Values{"MessageSid": {"SM1"}, "MessageStatus": {status}, "ErrorCode": {"30003"}, "To": {"+14155550123"}}
	}
	tampered := signed(form("delivered"))
	tampered.Body = []byte(strings.Replace(string(tampered.Body), "SM1", "SM2", 1))
	otherURL := signed(form("delivered"))
	otherURL.URL = inURL + "x"
	noKey := signed(form("delivered"))
	noKey.Config = map[string]any{}
	run(t, "sms-twilio", inbound.Deps{}, []verifyCase{
		{"delivered", signed(form("delivered")), []string{"delivered@SM1#SM1:delivered"}},
		{"undelivered", signed(form("undelivered")), []string{"failed@SM1#SM1:undelivered(30003)"}},
		{"failed", signed(form("failed")), []string{"failed@SM1#SM1:failed(30003)"}},
		{"sent is no outcome", signed(form("sent")), nil},
		{"tampered", tampered, []string{"ERR:signature"}},
		{"another url", otherURL, []string{"ERR:signature"}},
		{"no auth token", noKey, []string{"ERR:signature"}},
		{"unsigned", inbound.Request{URL: inURL, Body: []byte(form("delivered").Encode()), Config: cfg}, []string{"ERR:signature"}},
	})
}

const whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func resendReq(t *testing.T, id string, at time.Time, body string) inbound.Request {
	h := http.Header{}
	testinbound.SignSvix(t, h, whsec, id, at, []byte(body))
	return inbound.Request{URL: inURL, Header: h, Body: []byte(body), Config: map[string]any{"webhookSecret": whsec}}
}

func TestResend(t *testing.T) {
	tampered := resendReq(t, "msg_1", now, testinbound.ResendEvent("email.bounced", "em_1", "Permanent"))
	tampered.Body = []byte(testinbound.ResendEvent("email.bounced", "em_2", "Permanent"))
	standard := resendReq(t, "msg_s", now, testinbound.ResendEvent("email.delivered", "em_1", ""))
	for _, h := range []string{"id", "timestamp", "signature"} {
		standard.Header.Set("webhook-"+h, standard.Header.Get("svix-"+h))
		standard.Header.Del("svix-" + h)
	}
	noSecret := resendReq(t, "msg_1", now, testinbound.ResendEvent("email.delivered", "em_1", ""))
	noSecret.Config = map[string]any{}
	run(t, "email-resend", inbound.Deps{}, []verifyCase{
		{"delivered", resendReq(t, "msg_1", now, testinbound.ResendEvent("email.delivered", "em_1", "")), []string{"delivered@em_1#msg_1"}},
		{"webhook- headers", standard, []string{"delivered@em_1#msg_s"}},
		{"hard bounce", resendReq(t, "msg_2", now, testinbound.ResendEvent("email.bounced", "em_1", "Permanent")), []string{"bounced/hard@em_1#msg_2(General)"}},
		{"soft bounce", resendReq(t, "msg_3", now, testinbound.ResendEvent("email.bounced", "em_1", "Transient")), []string{"bounced/soft@em_1#msg_3(General)"}},
		{"complained", resendReq(t, "msg_4", now, testinbound.ResendEvent("email.complained", "em_1", "")), []string{"complained@em_1#msg_4"}},
		{"opened", resendReq(t, "msg_5", now, testinbound.ResendEvent("email.opened", "em_1", "")), []string{"opened@em_1#msg_5"}},
		{"clicked", resendReq(t, "msg_6", now, testinbound.ResendEvent("email.clicked", "em_1", "")), []string{"clicked@em_1#msg_6"}},
		{"sent is no outcome", resendReq(t, "msg_7", now, testinbound.ResendEvent("email.sent", "em_1", "")), nil},
		{"tampered", tampered, []string{"ERR:signature"}},
		{"stale", resendReq(t, "msg_8", now.Add(-time.Hour), testinbound.ResendEvent("email.delivered", "em_1", "")), []string{"ERR:signature"}},
		{"no secret", noSecret, []string{"ERR:signature"}},
		{"signed, not JSON", resendReq(t, "msg_9", now, "nope"), []string{"ERR:malformed"}},
	})
}

func TestSendGrid(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	cfg := map[string]any{"webhookPublicKey": base64.StdEncoding.EncodeToString(der)}
	signedAt := func(ts, body string) inbound.Request {
		h := http.Header{}
		h.Set(inbound.SendGridSignatureHeader, testinbound.SendGridSignature(t, key, ts, body))
		h.Set(inbound.SendGridTimestampHeader, ts)
		return inbound.Request{URL: inURL, Header: h, Body: []byte(body), Config: cfg}
	}
	signed := func(body string) inbound.Request { return signedAt(fmt.Sprint(now.Unix()), body) }
	ev := func(event, id, typ string) string {
		return `{"email":"ada@example.com","timestamp":1700000000,"event":"` + event + `","sg_event_id":"` + id +
			`","sg_message_id":"X1.filter0001.16648.5515E0B88.0","type":"` + typ + `","status":"5.1.1"}`
	}
	all := "[" + strings.Join([]string{ev("processed", "e0", ""), ev("delivered", "e1", ""), ev("bounce", "e2", "bounce"),
		ev("bounce", "e3", "blocked"), ev("dropped", "e4", ""), ev("spamreport", "e5", ""), ev("open", "e6", ""),
		ev("click", "e7", "")}, ",") + "]"
	tampered := signed(all)
	tampered.Body = bytes.Replace(tampered.Body, []byte("e2"), []byte("e9"), 1)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherDER, _ := x509.MarshalPKIXPublicKey(&other.PublicKey)
	wrongKey := signed(all)
	wrongKey.Config = map[string]any{"webhookPublicKey": base64.StdEncoding.EncodeToString(otherDER)}
	want := []string{"delivered@X1#e1", "bounced/hard@X1#e2(5.1.1)", "bounced/soft@X1#e3(5.1.1)",
		"failed@X1#e4", "complained@X1#e5", "opened@X1#e6", "clicked@X1#e7"}
	// Signed over an empty timestamp, sent without the header.
	noTimestamp := signedAt("", all)
	run(t, "email-sendgrid", inbound.Deps{}, []verifyCase{
		// Only a bounce keeps its status as the detail.
		{"every status", signed(all), want},
		{"tampered", tampered, []string{"ERR:signature"}},
		{"another key", wrongKey, []string{"ERR:signature"}},
		// The signed timestamp must be there and within five minutes.
		{"no timestamp", noTimestamp, []string{"ERR:signature"}},
		{"timestamp 5 min ago", signedAt(fmt.Sprint(now.Add(-inbound.MaxSkew).Unix()), all), want},
		{"timestamp 5 min 1 s ago", signedAt(fmt.Sprint(now.Add(-inbound.MaxSkew-time.Second).Unix()), all), []string{"ERR:signature"}},
		{"timestamp 5 min 1 s ahead", signedAt(fmt.Sprint(now.Add(inbound.MaxSkew+time.Second).Unix()), all), []string{"ERR:signature"}},
		{"a timestamp not in seconds", signedAt(now.Format(time.RFC3339), all), []string{"ERR:signature"}},
		// Today's sg_message_id: the X-Message-Id, then ".recvd-…"; an
		// older X-Message-Id held dots of its own.
		{"recvd suffix", signed(`[{"event":"delivered","sg_event_id":"r1","sg_message_id":"W86EgYT6SQKk0lRflfLRsA.recvd-5f7b89cdb5-dvzvd-1-6567E4A0-7.0"}]`),
			[]string{"delivered@W86EgYT6SQKk0lRflfLRsA#r1"}},
		{"older id with dots", signed(`[{"event":"delivered","sg_event_id":"r2","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0"}]`),
			[]string{"delivered@14c5d75ce93.dfd.64b469#r2"}},
		{"bare id", signed(`[{"event":"delivered","sg_event_id":"r3","sg_message_id":"W86EgYT6SQKk0lRflfLRsA"}]`),
			[]string{"delivered@W86EgYT6SQKk0lRflfLRsA#r3"}},
	})
}

func TestPostmark(t *testing.T) {
	req := func(body string) inbound.Request {
		return inbound.Request{URL: inURL, Body: []byte(body), Config: map[string]any{"serverToken": "x"}}
	}
	run(t, "email-postmark", inbound.Deps{}, []verifyCase{
		{"delivery", req(`{"RecordType":"Delivery","MessageID":"pm1","Recipient":"ada@example.com","DeliveredAt":"2026-11-27T12:00:00Z"}`),
			[]string{"delivered@pm1#Delivery:pm1:2026-11-27T12:00:00Z"}},
		{"hard bounce", req(`{"RecordType":"Bounce","ID":4323372036,"Type":"HardBounce","TypeCode":1,"MessageID":"pm1"}`),
			[]string{"bounced/hard@pm1#Bounce:4323372036(HardBounce)"}},
		{"soft bounce", req(`{"RecordType":"Bounce","ID":7,"Type":"SoftBounce","TypeCode":4096,"MessageID":"pm1"}`),
			[]string{"bounced/soft@pm1#Bounce:7(SoftBounce)"}},
		{"complaint", req(`{"RecordType":"SpamComplaint","ID":8,"Type":"SpamComplaint","MessageID":"pm1"}`),
			[]string{"complained@pm1#SpamComplaint:8"}},
		{"open", req(`{"RecordType":"Open","MessageID":"pm1","ReceivedAt":"2026-11-27T12:01:00Z"}`),
			[]string{"opened@pm1#Open:pm1:2026-11-27T12:01:00Z"}},
		{"click", req(`{"RecordType":"Click","MessageID":"pm1","ReceivedAt":"2026-11-27T12:02:00Z"}`),
			[]string{"clicked@pm1#Click:pm1:2026-11-27T12:02:00Z"}},
		{"subscription change", req(`{"RecordType":"SubscriptionChange","MessageID":"pm1"}`), nil},
		{"not JSON", req(`<xml/>`), []string{"ERR:malformed"}},
	})
}

func TestMailgun(t *testing.T) {
	const key = "mg-signing-key"
	ts := fmt.Sprint(now.Unix())
	bodyAt := func(ts, sig, event, severity string) string {
		return `{"signature":{"timestamp":"` + ts + `","token":"tok123","signature":"` + sig + `"},"event-data":{"id":"ev-` +
			event + `","event":"` + event + `","severity":"` + severity + `","recipient":"ada@example.com","delivery-status":{"code":550},"message":{"headers":{"message-id":"20261127.1@mg.example.com"}}}}`
	}
	body := func(sig, event, severity string) string { return bodyAt(ts, sig, event, severity) }
	good := testinbound.MailgunSignature(key, ts, "tok123")
	req := func(b string) inbound.Request {
		return inbound.Request{URL: inURL, Body: []byte(b), Config: map[string]any{"webhookSigningKey": key}}
	}
	// signedAt is a delivered event signed at the Unix time at.
	signedAt := func(at time.Time) inbound.Request {
		ts := fmt.Sprint(at.Unix())
		return req(bodyAt(ts, testinbound.MailgunSignature(key, ts, "tok123"), "delivered", ""))
	}
	noKey := req(body(good, "delivered", ""))
	noKey.Config = map[string]any{}
	const once = "once tok123"
	run(t, "email-mailgun", inbound.Deps{}, []verifyCase{
		{"delivered", req(body(good, "delivered", "")), []string{"delivered@20261127.1@mg.example.com#ev-delivered", once}},
		{"permanent failure", req(body(good, "failed", "permanent")), []string{"bounced/hard@20261127.1@mg.example.com#ev-failed(550)", once}},
		// No report, but its token is spent all the same: its signature
		// would otherwise carry a forged event.
		{"temporary failure", req(body(good, "failed", "temporary")), []string{once}},
		{"complained", req(body(good, "complained", "")), []string{"complained@20261127.1@mg.example.com#ev-complained", once}},
		{"opened", req(body(good, "opened", "")), []string{"opened@20261127.1@mg.example.com#ev-opened", once}},
		{"clicked", req(body(good, "clicked", "")), []string{"clicked@20261127.1@mg.example.com#ev-clicked", once}},
		{"bad signature", req(body(strings.Repeat("0", 64), "delivered", "")), []string{"ERR:signature"}},
		{"no key", noKey, []string{"ERR:signature"}},
		// The signed timestamp must be within five minutes of now.
		{"signed 5 min ago", signedAt(now.Add(-inbound.MaxSkew)), []string{"delivered@20261127.1@mg.example.com#ev-delivered", once}},
		{"signed 5 min 1 s ago", signedAt(now.Add(-inbound.MaxSkew - time.Second)), []string{"ERR:signature"}},
		{"signed a year ago", signedAt(now.AddDate(-1, 0, 0)), []string{"ERR:signature"}},
		{"signed 5 min 1 s ahead", signedAt(now.Add(inbound.MaxSkew + time.Second)), []string{"ERR:signature"}},
		{"a timestamp not in seconds", req(bodyAt("+"+ts, testinbound.MailgunSignature(key, "+"+ts, "tok123"), "delivered", "")),
			[]string{"ERR:signature"}},
	})
}

// snsSigner signs SNS messages with a certificate of its own, served by
// the injected fetcher only at an allowed URL.
type snsSigner struct {
	*testinbound.SNS
	fetched []string
}

const certURL = "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-test.pem"

// sesTopic is the topic the channel's topicArn names.
const sesTopic = "arn:aws:sns:eu-west-1:123456789012:ses"

func newSNSSigner(t *testing.T) *snsSigner {
	return &snsSigner{SNS: testinbound.NewSNS(t)}
}

func (s *snsSigner) deps() inbound.Deps {
	return inbound.Deps{SNSCertificate: func(_ context.Context, u string) (*x509.Certificate, error) {
		s.fetched = append(s.fetched, u)
		if u != certURL {
			return nil, errors.New("no such certificate")
		}
		return s.Cert, nil
	}}
}

// sign is the SNS request of m, signed.
func (s *snsSigner) sign(t *testing.T, m map[string]string) inbound.Request {
	return inbound.Request{URL: inURL, Body: s.Sign(t, m), Config: map[string]any{"region": "eu-west-1", "topicArn": sesTopic}}
}

func TestAllowedSNSURL(t *testing.T) {
	for u, want := range map[string]bool{
		certURL: true,
		"https://sns.cn-north-1.amazonaws.com.cn/x.pem":          true,
		"http://sns.eu-west-1.amazonaws.com/x.pem":               false,
		"https://sns.eu-west-1.amazonaws.com.evil.example/x.pem": false,
		"https://evil.example/sns.eu-west-1.amazonaws.com/x.pem": false,
		"https://user@sns.eu-west-1.amazonaws.com/x.pem":         false,
		"https://sns.eu-west-1.amazonaws.com:8443/x.pem":         false,
		"https://169.254.169.254/latest/meta-data":               false,
		"https://s3.amazonaws.com/x.pem":                         false,
		// Amazon hosts that are no SNS region's: S3 serves what a
		// bucket's owner put there.
		"https://sns.s3.amazonaws.com/x.pem":            false,
		"https://sns.s3-website.amazonaws.com/x.pem":    false,
		"https://sns.amazonaws.com/x.pem":               false,
		"https://sns.us-gov-west-1.amazonaws.com/x.pem": true,
	} {
		if got := inbound.AllowedSNSURL(u); got != want {
			t.Errorf("%s: %v, want %v", u, got, want)
		}
	}
}

func TestTokens(t *testing.T) {
	k, _ := secrets.NewKeyring(bytes.Repeat([]byte{7}, secrets.KeySize))
	tk := inbound.NewTokens(k, "https://herald.example/")
	c := inbound.Claims{Tenant: "ten_a", ChannelKey: "email-resend", Seq: 42, Generation: "g1"}
	u, err := tk.URL(c)
	if err != nil || !strings.HasPrefix(u, "https://herald.example/in/") {
		t.Fatalf("%s %v", u, err)
	}
	tok := strings.TrimPrefix(u, "https://herald.example/in/")
	if strings.Contains(tok, "ten_a") || strings.Contains(tok, "resend") || strings.ContainsAny(tok, "/?#%+ ") {
		t.Fatalf("token %s is not opaque and URL-safe", tok)
	}
	if got, err := tk.Open(tok); err != nil || got != c {
		t.Fatalf("open: %+v %v", got, err)
	}
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 1
		if _, err := tk.Open(string(b)); !errors.Is(err, inbound.ErrInvalidToken) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
	// A token of another purpose (an unsubscribe link's) does not open.
	other, _ := k.SealClaims("", "unsubscribe", c)
	if _, err := tk.Open(other); !errors.Is(err, inbound.ErrInvalidToken) {
		t.Fatal("a token of another purpose opened")
	}
}

// sesNotification is an SNS Notification of an SES event.
func sesNotification(id, version, sesEvent string) map[string]string {
	return map[string]string{"Type": "Notification", "MessageId": id, "TopicArn": "arn:aws:sns:eu-west-1:123456789012:ses",
		"Message": sesEvent, "Timestamp": "2026-11-27T12:00:00.000Z", "SignatureVersion": version, "SigningCertURL": certURL}
}

func sesEvent(typ, extra string) string {
	return `{"eventType":"` + typ + `","mail":{"messageId":"ses-1","destination":["ada@example.com"]}` + extra + `}`
}

func TestSES(t *testing.T) {
	s := newSNSSigner(t)
	tampered := s.sign(t, sesNotification("n1", "2", sesEvent("Delivery", "")))
	tampered.Body = bytes.Replace(tampered.Body, []byte("Delivery"), []byte("Complaint"), 1)
	badHost := sesNotification("n1", "2", sesEvent("Delivery", ""))
	badHost["SigningCertURL"] = "https://evil.example/cert.pem"
	confirm := map[string]string{"Type": "SubscriptionConfirmation", "MessageId": "c1", "Token": "tok",
		"TopicArn": "arn:aws:sns:eu-west-1:123456789012:ses", "Message": "You have chosen to subscribe",
		"SubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=tok",
		"Timestamp":    "2026-11-27T12:00:00.000Z", "SignatureVersion": "1", "SigningCertURL": certURL}
	evilConfirm := map[string]string{}
	for k, v := range confirm {
		evilConfirm[k] = v
	}
	evilConfirm["SubscribeURL"] = "http://127.0.0.1:9/steal"
	otherTopic := sesNotification("n8", "2", sesEvent("Bounce", `,"bounce":{"bounceType":"Permanent"}`))
	otherTopic["TopicArn"] = "arn:aws:sns:eu-west-1:999999999999:ses"
	otherConfirm := maps.Clone(confirm)
	otherConfirm["TopicArn"] = "arn:aws:sns:eu-west-1:999999999999:attacker"
	noTopic := s.sign(t, sesNotification("n1", "2", sesEvent("Delivery", "")))
	noTopic.Config = map[string]any{"region": "eu-west-1"}
	subject := sesNotification("n9", "1", sesEvent("Open", ""))
	subject["Subject"] = "Amazon SES Email Event Notification"
	run(t, "email-ses", s.deps(), []verifyCase{
		{"delivery v2", s.sign(t, sesNotification("n1", "2", sesEvent("Delivery", ""))), []string{"delivered@ses-1#n1"}},
		{"hard bounce v1", s.sign(t, sesNotification("n2", "1", sesEvent("Bounce", `,"bounce":{"bounceType":"Permanent","bounceSubType":"General"}`))),
			[]string{"bounced/hard@ses-1#n2(General)"}},
		{"soft bounce", s.sign(t, sesNotification("n3", "2", sesEvent("Bounce", `,"bounce":{"bounceType":"Transient","bounceSubType":"MailboxFull"}`))),
			[]string{"bounced/soft@ses-1#n3(MailboxFull)"}},
		{"complaint (notification)", s.sign(t, sesNotification("n4", "2",
			`{"notificationType":"Complaint","mail":{"messageId":"ses-1"},"complaint":{"feedbackId":"f"}}`)),
			[]string{"complained@ses-1#n4"}},
		{"open with subject", s.sign(t, subject), []string{"opened@ses-1#n9"}},
		{"click", s.sign(t, sesNotification("n5", "2", sesEvent("Click", ""))), []string{"clicked@ses-1#n5"}},
		{"reject", s.sign(t, sesNotification("n6", "2", sesEvent("Reject", ""))), []string{"failed@ses-1#n6"}},
		{"send is no outcome", s.sign(t, sesNotification("n7", "2", sesEvent("Send", ""))), nil},
		{"subscription confirmation", s.sign(t, confirm), []string{"confirm " + confirm["SubscribeURL"]}},
		{"confirmation to another host", s.sign(t, evilConfirm), []string{"ERR:malformed"}},
		{"tampered", tampered, []string{"ERR:signature"}},
		{"certificate from another host", s.sign(t, badHost), []string{"ERR:signature"}},
		// Any AWS account signs its own topics' messages with Amazon's
		// certificate: only the channel's topic is heard, its
		// subscription confirmation included.
		{"another account's topic", s.sign(t, otherTopic), []string{"ERR:signature"}},
		{"confirmation of another topic", s.sign(t, otherConfirm), []string{"ERR:signature"}},
		{"a channel without topicArn", noTopic, []string{"ERR:signature"}},
	})
	for _, u := range s.fetched {
		if u != certURL {
			t.Fatalf("fetched %s", u)
		}
	}
	// With no certificate source, nothing is heard.
	run(t, "email-ses", inbound.Deps{}, []verifyCase{
		{"no fetcher", s.sign(t, sesNotification("n1", "2", sesEvent("Delivery", ""))), []string{"ERR:signature"}},
	})
}

// vonageSigned is a Vonage SMS API delivery receipt signed by method
// (see testinbound.VonageSignature); an HMAC in upper case, as Vonage
// may send it.
func vonageSigned(method, secret string, params url.Values) url.Values {
	sig := testinbound.VonageSignature(method, secret, params)
	if method != "md5hash" {
		sig = strings.ToUpper(sig)
	}
	out := url.Values{"sig": {sig}}
	for k, v := range params {
		out[k] = v
	}
	return out
}

func TestVonage(t *testing.T) {
	const secret = "vonage-signature-secret"
	const id = "0C000000217B7F02"
	receipt := func(status, errCode string) url.Values {
		return url.Values{"msisdn": {"447700900000"}, "to": {"Acme"}, "network-code": {"23410"}, "messageId": {id},
			"price": {"0.03330000"}, "status": {status}, "scts": {"2611271200"}, "err-code": {errCode},
			"api-key": {"a1b2c3d4"}, "message-timestamp": {"2026-11-27 12:00:00"}, "timestamp": {"1795780800"},
			"nonce": {"a5ff6c3f-3d1e-4c4b-9a7b-6d2f0e1c8b9a"}, "client-ref": {"a&b=c"}}
	}
	form := func(v url.Values) inbound.Request {
		return inbound.Request{URL: inURL, Body: []byte(v.Encode()), Config: map[string]any{"signatureSecret": secret}}
	}
	postJSON := func(v url.Values) inbound.Request {
		m := map[string]string{}
		for k := range v {
			m[k] = v.Get(k)
		}
		b, _ := json.Marshal(m)
		return inbound.Request{URL: inURL, Body: b, Config: map[string]any{"signatureSecret": secret}}
	}
	tampered := vonageSigned("md5hash", secret, receipt("delivered", "0"))
	tampered.Set("messageId", "0C000000217B7F03")
	unsigned := receipt("delivered", "0")
	noSecret := form(vonageSigned("md5hash", secret, receipt("delivered", "0")))
	noSecret.Config = map[string]any{}
	// The vector of Vonage's own client library: a=1, b=2,
	// timestamp=1461605396 with the secret "secret" sign to this.
	known := inbound.Request{URL: inURL, Body: []byte("a=1&b=2&timestamp=1461605396&sig=6af838ef94998832dbfc29020b564830"),
		Config: map[string]any{"signatureSecret": "secret"}}
	run(t, "sms-vonage", inbound.Deps{}, []verifyCase{
		{"delivered (MD5 hash)", form(vonageSigned("md5hash", secret, receipt("delivered", "0"))), []string{"delivered@" + id + "#" + id + ":delivered"}},
		{"failed (SHA-256 HMAC)", form(vonageSigned("sha256", secret, receipt("failed", "6"))), []string{"failed@" + id + "#" + id + ":failed(6)"}},
		{"expired (SHA-512 HMAC, POST-JSON)", postJSON(vonageSigned("sha512", secret, receipt("expired", "1"))), []string{"failed@" + id + "#" + id + ":expired(1)"}},
		{"rejected", form(vonageSigned("md5hash", secret, receipt("rejected", "4"))), []string{"failed@" + id + "#" + id + ":rejected(4)"}},
		{"accepted is no outcome", form(vonageSigned("md5hash", secret, receipt("accepted", "0"))), nil},
		{"the library's vector", known, nil},
		{"tampered", form(tampered), []string{"ERR:signature"}},
		{"unsigned", form(unsigned), []string{"ERR:signature"}},
		{"another secret", form(vonageSigned("md5hash", "other", receipt("delivered", "0"))), []string{"ERR:signature"}},
		{"no signature secret", noSecret, []string{"ERR:signature"}},
	})
}

// TestCertFetcherFetchesOnlyFromAmazon: the default fetcher refuses any
// URL but an https one of an SNS host before dialling (a message could
// otherwise make Herald call a host of the sender's choice), and so does
// the subscription confirmation.
func TestCertFetcherFetchesOnlyFromAmazon(t *testing.T) {
	f := inbound.NewCertFetcher()
	dialled := false
	f.Client = &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) {
		dialled = true
		return nil, errors.New("no network in tests")
	})}
	for _, u := range []string{"http://127.0.0.1/cert.pem", "https://169.254.169.254/latest/meta-data",
		"https://sns.eu-west-1.amazonaws.com.evil.example/c.pem", "file:///etc/passwd"} {
		if _, err := f.Certificate(context.Background(), u); err == nil {
			t.Fatalf("%s: fetched", u)
		}
		if err := f.Confirm(context.Background(), u); err == nil {
			t.Fatalf("%s: confirmed", u)
		}
	}
	if dialled {
		t.Fatal("a refused URL was dialled")
	}
	if _, err := f.Certificate(context.Background(), certURL); err == nil || !dialled {
		t.Fatalf("an allowed URL is fetched: %v %v", err, dialled)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
