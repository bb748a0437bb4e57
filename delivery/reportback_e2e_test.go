package delivery_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testinbound"
)

// reportBack is one provider that reports what became of a message: its
// loopback API, which answers a send with the provider's id of the
// message in the provider's own form, and its documented webhook,
// which names that message the way the provider's documentation says.
type reportBack struct {
	channelKey string
	kind       string // "email" or "sms"
	to         string
	// api answers a send (after checking it is the provider's request).
	api func(w http.ResponseWriter, r *http.Request)
	// config is the channel's config with the API at base.
	config func(base string) map[string]any
	// event is the signed webhook request of the provider reporting
	// want on the message sentID, to be posted to inboundURL.
	event func(t *testing.T, inboundURL string) *http.Request
	// want is the row's status after the event.
	want string
}

// TestEveryProviderReportLandsOnItsSend: for each provider that reports
// back, a message sent through Herald's sender against the provider's
// loopback API, then a correctly signed webhook of the provider carrying
// the message's id exactly as the provider's documentation shows it: the
// report lands on that send's delivery row.
func TestEveryProviderReportLandsOnItsSend(t *testing.T) {
	sns := newSNSAmazon(t)
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic},
		SNSClient: sns.client()})
	for _, c := range reportBackCases(t, sns) {
		t.Run(c.channelKey, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(c.api))
			t.Cleanup(api.Close)
			_, key := h.Tenant("Acme " + c.channelKey)
			f := &inboundFixture{t: t, h: h, key: key}
			wf := noted
			if c.kind == "sms" {
				wf = texted
			}
			runID, inboundURL := f.sendOne(c.channelKey, c.config(api.URL), c.kind, c.to, wf)
			if rows := f.rows(runID); len(rows) != 1 || rows[0].Status != "sent" || rows[0].ProviderMessageID == "" {
				t.Fatalf("the send: %+v", rows)
			}

			var err error
			// The provider calls the public inboundUrl, which reaches the
			// service's listener.
			path, ok := strings.CutPrefix(inboundURL, inboundPublic)
			if !ok {
				t.Fatalf("inboundUrl %q", inboundURL)
			}
			req := c.event(t, inboundURL)
			if req.URL, err = url.Parse(h.URL() + path); err != nil {
				t.Fatal(err)
			}
			req.Host = ""
			resp, err := h.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the report: %d %s (200 is recorded, 202 names no message sent)", resp.StatusCode, body)
			}
			rows := f.rows(runID)
			if len(rows) != 1 || rows[0].Status != c.want || len(rows[0].Events) != 1 || rows[0].Events[0].Type != c.want {
				t.Fatalf("after the report: %+v, want %s", rows, c.want)
			}
			// Every bounce here is a hard one: the address is suppressed.
			if sup := f.suppressions(); c.want == "bounced" && sup[c.to] != "hard_bounce" || c.want != "bounced" && len(sup) != 0 {
				t.Fatalf("suppressions %v", sup)
			}
		})
	}
}

// reportBackCases are the providers that report back, one each.
func reportBackCases(t *testing.T, sns *snsAmazon) []reportBack {
	const (
		pmToken      = "pm-server-token"
		mgKey        = "mg-api-key"
		mgSigningKey = "mg-webhook-signing-key"
		twToken      = "twilio-auth-token-5e1f"
		vonageSecret = "vonage-signature-secret"
	)
	sgKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sgDER, _ := x509.MarshalPKIXPublicKey(&sgKey.PublicKey)
	post := func(t *testing.T, inboundURL, contentType, body string) *http.Request {
		t.Helper()
		req, err := http.NewRequest("POST", inboundURL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		return req
	}
	return []reportBack{
		{
			channelKey: "email-ses", kind: "email", to: "ada@example.com",
			// SES answers SendEmail with its MessageId; an SES event
			// names the message by mail.messageId, "the ID that Amazon
			// SES returned to you when you sent the message".
			api: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v2/email/outbound-emails" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				_, _ = io.WriteString(w, `{"MessageId":"010701928e5e0c7b-9c4a1a4e-7d5e-4c9b-8a0f-3f1e2d4c5b6a-000000"}`)
			},
			config: func(base string) map[string]any {
				return map[string]any{"region": "eu-west-1", "accessKeyId": "AKIDEXAMPLE",
					"secretAccessKey": "ses-secret-key", "fromEmail": "noreply@herald.test", "endpoint": base,
					"topicArn": sesTopicArn}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				ses := `{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General",` +
					`"bouncedRecipients":[{"emailAddress":"ada@example.com","action":"failed","status":"5.1.1"}],` +
					`"timestamp":"2026-11-27T12:00:01.000Z","feedbackId":"01070192-feedback-000000"},` +
					`"mail":{"timestamp":"2026-11-27T12:00:00.000Z","source":"noreply@herald.test",` +
					`"messageId":"010701928e5e0c7b-9c4a1a4e-7d5e-4c9b-8a0f-3f1e2d4c5b6a-000000","destination":["ada@example.com"]}}`
				req := post(t, inboundURL, "text/plain; charset=UTF-8", sns.notification(t, "7b5c2a6e-5d0f-5b1e-9c3a-2f4e6d8a0b1c", ses))
				req.Header.Set("x-amz-sns-message-type", "Notification")
				return req
			},
			want: "bounced",
		},
		{
			channelKey: "email-postmark", kind: "email", to: "ada@example.com",
			api: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/email" || r.Header.Get("X-Postmark-Server-Token") != pmToken {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, `{"To":"ada@example.com","SubmittedAt":"2026-11-27T12:00:00Z",`+
					`"MessageID":"b7bc2f4a-e38e-4336-af7d-e6c392c2f817","ErrorCode":0,"Message":"OK"}`)
			},
			config: func(base string) map[string]any {
				return map[string]any{"serverToken": pmToken, "fromEmail": "noreply@herald.test", "apiBaseUrl": base}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				return post(t, inboundURL, "application/json", `{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound",`+
					`"MessageID":"b7bc2f4a-e38e-4336-af7d-e6c392c2f817","Recipient":"ada@example.com","Tag":"",`+
					`"DeliveredAt":"2026-11-27T12:00:03Z","Details":"Test delivery webhook details","Metadata":{}}`)
			},
			want: "delivered",
		},
		{
			channelKey: "email-resend", kind: "email", to: "ada@example.com",
			api: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/emails" || r.Header.Get("Authorization") != "Bearer re_test_key" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, `{"id":"4ef9a417-02e9-4d39-ad75-9611e0fcc33c"}`)
			},
			config: func(base string) map[string]any {
				return map[string]any{"apiKey": "re_test_key", "fromEmail": "noreply@herald.test",
					"webhookSecret": resendSecret, "apiBaseUrl": base}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				body := testinbound.ResendEvent("email.delivered", "4ef9a417-02e9-4d39-ad75-9611e0fcc33c", "")
				req := post(t, inboundURL, "application/json", body)
				testinbound.SignSvix(t, req.Header, resendSecret, "msg_2ZbCfQyHqkkhLyG0KO6rWyB1HbP", time.Now(), []byte(body))
				return req
			},
			want: "delivered",
		},
		{
			channelKey: "email-sendgrid", kind: "email", to: "ada@example.com",
			// Mail Send answers 202 with the X-Message-Id header; the
			// Event Webhook's sg_message_id begins with it, then a dot
			// and SendGrid's own suffix (".recvd-…" on today's mail,
			// ".filter…" on older).
			api: func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v3/mail/send" || r.Header.Get("Authorization") != "Bearer SG.test" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.Header().Set("X-Message-Id", "W86EgYT6SQKk0lRflfLRsA")
				w.WriteHeader(http.StatusAccepted)
			},
			config: func(base string) map[string]any {
				return map[string]any{"apiKey": "SG.test", "fromEmail": "noreply@herald.test",
					"webhookPublicKey": base64.StdEncoding.EncodeToString(sgDER), "apiBaseUrl": base}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				body := `[{"email":"ada@example.com","timestamp":1795780801,"smtp-id":"<W86EgYT6SQKk0lRflfLRsA@geopod-ismtpd-3>",` +
					`"event":"bounce","bounce_classification":"Invalid Address","category":[],` +
					`"sg_event_id":"Ym91bmNlLTAtMjk3NjQzNzctVzg2RWdZVDZTUUtrMGxSZmxmTHJzQS0w",` +
					`"sg_message_id":"W86EgYT6SQKk0lRflfLRsA.recvd-5f7b89cdb5-dvzvd-1-6567E4A0-7.0",` +
					`"reason":"550 5.1.1 The email account that you tried to reach does not exist.","status":"5.1.1","type":"bounce"}]`
				ts := fmt.Sprint(time.Now().Unix()) // signed as it is sent
				req := post(t, inboundURL, "application/json", body)
				req.Header.Set("X-Twilio-Email-Event-Webhook-Signature", testinbound.SendGridSignature(t, sgKey, ts, body))
				req.Header.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
				return req
			},
			want: "bounced",
		},
		{
			channelKey: "email-mailgun", kind: "email", to: "ada@example.com",
			// Mailgun answers {"id":"<…>"}, its Message-Id header; an
			// event's message.headers.message-id has no angle brackets.
			api: func(w http.ResponseWriter, r *http.Request) {
				if u, p, ok := r.BasicAuth(); r.URL.Path != "/v3/mg.herald.test/messages" || !ok || u != "api" || p != mgKey {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, `{"id":"<20261127120000.1.5C1F3E2A0B@mg.herald.test>","message":"Queued. Thank you."}`)
			},
			config: func(base string) map[string]any {
				return map[string]any{"apiKey": mgKey, "domain": "mg.herald.test", "fromEmail": "noreply@herald.test",
					"webhookSigningKey": mgSigningKey, "apiBaseUrl": base}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				ts, tok := fmt.Sprint(time.Now().Unix()), "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
				sig := testinbound.MailgunSignature(mgSigningKey, ts, tok)
				body := `{"signature":{"timestamp":"` + ts + `","token":"` + tok + `","signature":"` + sig + `"},` +
					`"event-data":{"id":"G9Bn5sl1TC6nu79C8C0bwg","timestamp":1795780801.123,"log-level":"error",` +
					`"event":"failed","severity":"permanent","reason":"bounce","recipient":"ada@example.com",` +
					`"delivery-status":{"code":550,"message":"5.1.1 The email account that you tried to reach does not exist","attempt-no":1},` +
					`"message":{"headers":{"to":"ada@example.com","message-id":"20261127120000.1.5C1F3E2A0B@mg.herald.test",` +
					`"from":"noreply@herald.test","subject":"Welcome"},"size":111}}}`
				return post(t, inboundURL, "application/json", body)
			},
			want: "bounced",
		},
		{
			channelKey: "sms-twilio", kind: "sms", to: "+14155550123",
			api: func(w http.ResponseWriter, r *http.Request) {
				if u, p, ok := r.BasicAuth(); r.URL.Path != "/2010-04-01/Accounts/AC123/Messages.json" || !ok || u != "AC123" || p != twToken {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, `{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"}`)
			},
			config: func(base string) map[string]any {
				return map[string]any{"accountSid": "AC123", "authToken": twToken, "from": "+15550100", "apiBaseUrl": base}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				form := url.Values{"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "SmsSid": {"SM0123456789abcdef0123456789abcdef"},
					"MessageStatus": {"delivered"}, "SmsStatus": {"delivered"}, "AccountSid": {"AC123"},
					"From": {"+15550100"}, "To": {"+14155550123"}, "ApiVersion": {"2010-04-01"}}
				req := post(t, inboundURL, "application/x-www-form-urlencoded", form.Encode())
				req.Header.Set("X-Twilio-Signature", testinbound.TwilioSignature(twToken, inboundURL, form))
				return req
			},
			want: "delivered",
		},
		{
			channelKey: "sms-vonage", kind: "sms", to: "+447700900000",
			// The SMS API answers each part's message-id; its delivery
			// receipt names the part by messageId, and is signed (sig)
			// with the signature secret when the account signs webhooks.
			api: func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				if r.URL.Path != "/sms/json" || r.PostForm.Get("api_key") != "a1b2c3d4" || r.PostForm.Get("api_secret") != "vonage-api-secret" {
					_, _ = io.WriteString(w, `{"message-count":"1","messages":[{"status":"4","error-text":"Bad Credentials"}]}`)
					return
				}
				_, _ = io.WriteString(w, `{"message-count":"1","messages":[{"to":"447700900000","message-id":"0C000000217B7F02",`+
					`"status":"0","remaining-balance":"3.14159265","message-price":"0.03330000","network":"23410"}]}`)
			},
			config: func(base string) map[string]any {
				return map[string]any{"apiKey": "a1b2c3d4", "apiSecret": "vonage-api-secret", "from": "Acme",
					"signatureSecret": vonageSecret, "apiBaseUrl": base}
			},
			event: func(t *testing.T, inboundURL string) *http.Request {
				form := url.Values{"msisdn": {"447700900000"}, "to": {"Acme"}, "network-code": {"23410"},
					"messageId": {"0C000000217B7F02"}, "price": {"0.03330000"}, "status": {"delivered"},
					"scts": {"2611271200"}, "err-code": {"0"}, "api-key": {"a1b2c3d4"},
					"message-timestamp": {"2026-11-27 12:00:00"}, "timestamp": {fmt.Sprint(time.Now().Unix())},
					"nonce": {"a5ff6c3f-3d1e-4c4b-9a7b-6d2f0e1c8b9a"}}
				form.Set("sig", testinbound.VonageSignature("md5hash", vonageSecret, form))
				return post(t, inboundURL, "application/x-www-form-urlencoded", form.Encode())
			},
			want: "delivered",
		},
	}
}

// snsAmazon stands in for Amazon's SNS: it signs notifications with a
// certificate of its own, served at an SNS SigningCertURL to the
// service's SNS client.
type snsAmazon struct{ *testinbound.SNS }

// sesTopicArn is the SNS topic of the SES channel's events.
const sesTopicArn = "arn:aws:sns:eu-west-1:123456789012:ses-events"

const snsCertURL = "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem"

func newSNSAmazon(t *testing.T) *snsAmazon { return &snsAmazon{testinbound.NewSNS(t)} }

// client answers the certificate URL and nothing else.
func (s *snsAmazon) client() *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.URL.String() != snsCertURL {
			return &http.Response{StatusCode: 404, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(s.CertPEM)), Request: r}, nil
	})}
}

// clientConfirming is client, also answering the subscription
// confirmations of SNS, whose SubscribeURLs it appends to confirmed.
func (s *snsAmazon) clientConfirming(confirmed *[]string) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		switch {
		case r.URL.String() == snsCertURL:
			return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(s.CertPEM)), Request: r}, nil
		case r.URL.Query().Get("Action") == "ConfirmSubscription":
			*confirmed = append(*confirmed, r.URL.String())
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("<ConfirmSubscriptionResponse/>")), Request: r}, nil
		}
		return &http.Response{StatusCode: 404, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})}
}

// confirmation is an SNS SubscriptionConfirmation of topic, signed.
func (s *snsAmazon) confirmation(t *testing.T, topic string) string {
	return string(s.Sign(t, map[string]string{"Type": "SubscriptionConfirmation", "MessageId": "c-" + topic, "Token": "tok",
		"TopicArn": topic, "Message": "You have chosen to subscribe to the topic " + topic,
		"SubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + topic + "&Token=tok",
		"Timestamp":    "2026-11-27T12:00:00.000Z", "SignatureVersion": "1", "SigningCertURL": snsCertURL}))
}

// notificationOf is an SNS Notification of message on topic, signed.
func (s *snsAmazon) notificationOf(t *testing.T, topic, id, message string) string {
	return string(s.Sign(t, map[string]string{"Type": "Notification", "MessageId": id, "TopicArn": topic, "Message": message,
		"Timestamp": "2026-11-27T12:00:02.000Z", "SignatureVersion": "1", "SigningCertURL": snsCertURL}))
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// notification is an SNS HTTPS Notification of message, signed
// (SignatureVersion 1: SHA1withRSA over the documented string to sign).
func (s *snsAmazon) notification(t *testing.T, id, message string) string {
	m := map[string]string{"Type": "Notification", "MessageId": id,
		"TopicArn": sesTopicArn, "Message": message,
		"Timestamp": "2026-11-27T12:00:02.000Z", "SignatureVersion": "1", "SigningCertURL": snsCertURL,
		"UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:eu-west-1:123456789012:ses-events:1"}
	return string(s.Sign(t, m))
}
