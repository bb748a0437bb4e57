package inbound

import (
	"context"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/standardwebhooks"
)

// verifyTwilio: a status callback, a form of MessageSid, MessageStatus
// and ErrorCode, signed by X-Twilio-Signature: the base64 HMAC-SHA1, keyed
// by the auth token, of the URL Twilio called followed by each POST
// parameter's name and value, sorted by name. Twilio sends one callback
// per status and no event id: the message and its status are the id.
func verifyTwilio(_ context.Context, r Request, _ Deps) (Result, error) {
	token := configString(r.Config, "authToken")
	sig := r.Header.Get("X-Twilio-Signature")
	if token == "" || sig == "" {
		return Result{}, ErrSignature
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		return Result{}, ErrSignature
	}
	if !hmac.Equal([]byte(sig), []byte(twilioSignature(token, r.URL, form))) {
		return Result{}, ErrSignature
	}
	sid, status := form.Get("MessageSid"), form.Get("MessageStatus")
	return twilioOutcomes.result(event{name: status, id: sid + ":" + status, messageID: sid, detail: form.Get("ErrorCode")}), nil
}

// twilioOutcomes are the MessageStatus values that are outcomes (queued,
// sending, sent, accepted are not).
var twilioOutcomes = outcomes{
	"delivered":   events.ReportDelivered,
	"undelivered": events.ReportFailed,
	"failed":      events.ReportFailed,
	"read":        events.ReportOpened,
}

// twilioSignature is the X-Twilio-Signature of a form posted to rawURL.
func twilioSignature(authToken, rawURL string, form url.Values) string {
	var b strings.Builder
	b.WriteString(rawURL)
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range form[k] {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// verifyResend: Resend signs with Svix, the Standard Webhooks scheme
// under svix- headers, keyed by the webhook's signing secret (whsec_…).
// The svix-id is the event id.
func verifyResend(_ context.Context, r Request, _ Deps) (Result, error) {
	secret, err := standardwebhooks.ParseSecret(configString(r.Config, "webhookSecret"))
	if err != nil {
		return Result{}, ErrSignature
	}
	// Svix names the standard's three headers svix-*; either set works.
	id, ts, sig := r.Header.Get("svix-id"), r.Header.Get("svix-timestamp"), r.Header.Get("svix-signature")
	if id == "" {
		id, ts, sig = r.Header.Get(standardwebhooks.HeaderID), r.Header.Get(standardwebhooks.HeaderTimestamp), r.Header.Get(standardwebhooks.HeaderSignature)
	}
	if secret.Verify(id, ts, sig, r.Body, r.Now) != nil {
		return Result{}, ErrSignature
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			EmailID string `json:"email_id"`
			Bounce  struct {
				Type    string `json:"type"`
				SubType string `json:"subType"`
			} `json:"bounce"`
		} `json:"data"`
	}
	if json.Unmarshal(r.Body, &ev) != nil {
		return Result{}, ErrMalformed
	}
	return resendOutcomes.result(event{name: ev.Type, id: id, messageID: ev.Data.EmailID,
		hard: ev.Data.Bounce.Type == "Permanent", detail: ev.Data.Bounce.SubType}), nil
}

// resendOutcomes are Resend's event types that are outcomes (not
// email.sent, email.delivery_delayed, …).
var resendOutcomes = outcomes{
	"email.delivered":  events.ReportDelivered,
	"email.bounced":    events.ReportBounced,
	"email.complained": events.ReportComplained,
	"email.opened":     events.ReportOpened,
	"email.clicked":    events.ReportClicked,
	"email.failed":     events.ReportFailed,
}

// SendGrid's Event Webhook signature headers.
const (
	SendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	SendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// verifySendGrid: the Event Webhook posts a JSON array of events, signed
// with ECDSA (P-256, SHA-256) over the timestamp header (a Unix time,
// which must be within MaxSkew of now) followed by the body; the signature header is the base64 of its ASN.1 form, the
// channel's webhookPublicKey the base64 of the key's DER (as SendGrid
// shows it). sg_message_id begins with the X-Message-Id the send
// recorded (see sendGridMessageID).
func verifySendGrid(_ context.Context, r Request, _ Deps) (Result, error) {
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(configString(r.Config, "webhookPublicKey")))
	if err != nil || len(der) == 0 {
		return Result{}, ErrSignature
	}
	key, err := x509.ParsePKIXPublicKey(der)
	pub, ok := key.(*ecdsa.PublicKey)
	if err != nil || !ok {
		return Result{}, ErrSignature
	}
	sig, err := base64.StdEncoding.DecodeString(r.Header.Get(SendGridSignatureHeader))
	ts := r.Header.Get(SendGridTimestampHeader)
	if err != nil || len(sig) == 0 || !fresh(ts, r.Now) {
		return Result{}, ErrSignature
	}
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(r.Body)
	if !ecdsa.VerifyASN1(pub, h.Sum(nil), sig) {
		return Result{}, ErrSignature
	}
	var raw []struct {
		Event     string `json:"event"`
		EventID   string `json:"sg_event_id"`
		MessageID string `json:"sg_message_id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
	}
	if json.Unmarshal(r.Body, &raw) != nil {
		return Result{}, ErrMalformed
	}
	evs := make([]event, 0, len(raw))
	for _, e := range raw {
		// A bounce of type "bounce" is a permanent refusal, "blocked" a
		// temporary one.
		ev := event{name: e.Event, id: e.EventID, messageID: sendGridMessageID(e.MessageID), hard: e.Type != "blocked"}
		if e.Event == "bounce" {
			// The receiving server's code; a drop's status is SendGrid's
			// own, never recorded.
			ev.detail = e.Status
		}
		evs = append(evs, ev)
	}
	return sendGridOutcomes.result(evs...), nil
}

// sendGridOutcomes are the Event Webhook's events that are outcomes (not
// processed, deferred, unsubscribe, group_…).
var sendGridOutcomes = outcomes{
	"delivered":  events.ReportDelivered,
	"bounce":     events.ReportBounced,
	"dropped":    events.ReportFailed,
	"spamreport": events.ReportComplained,
	"open":       events.ReportOpened,
	"click":      events.ReportClicked,
}

// sendGridMessageID is the X-Message-Id that Mail Send answered for the
// message an event's sg_message_id names: SendGrid's id of the message
// begins with it, followed by a dot and a suffix of SendGrid's own
// (".recvd-…" on today's mail, ".filter…" on older). An X-Message-Id of
// today has no dot; an older one could ("14c5d75ce93.dfd.64b469"), and
// its suffix was ".filter…", so that one is cut first.
func sendGridMessageID(sg string) string {
	if id, _, ok := strings.Cut(sg, ".filter"); ok {
		return id
	}
	id, _, _ := strings.Cut(sg, ".")
	return id
}

// postmarkHard are Postmark bounce types that say the address will never
// take mail.
var postmarkHard = map[string]bool{"HardBounce": true, "BadEmailAddress": true, "ManuallyDeactivated": true}

// verifyPostmark: Postmark signs nothing; its webhook is checked by the
// inbound URL's token alone (unguessable, sealed by Herald, retired by a
// rotation). One event per request: RecordType Delivery, Bounce,
// SpamComplaint, Open, Click. Bounces and complaints carry Postmark's
// "ID"; other records are identified by their message, type and time.
func verifyPostmark(_ context.Context, r Request, _ Deps) (Result, error) {
	var ev struct {
		RecordType  string      `json:"RecordType"`
		MessageID   string      `json:"MessageID"`
		ID          json.Number `json:"ID"`
		Type        string      `json:"Type"`
		TypeCode    json.Number `json:"TypeCode"`
		DeliveredAt string      `json:"DeliveredAt"`
		ReceivedAt  string      `json:"ReceivedAt"`
		BouncedAt   string      `json:"BouncedAt"`
	}
	if json.Unmarshal(r.Body, &ev) != nil {
		return Result{}, ErrMalformed
	}
	at := ev.DeliveredAt + ev.ReceivedAt + ev.BouncedAt
	id := ev.RecordType + ":" + ev.MessageID + ":" + at
	if ev.ID != "" && ev.ID != "0" {
		id = ev.RecordType + ":" + ev.ID.String()
	}
	name := ev.RecordType
	if name == "Bounce" && ev.Type == "SpamComplaint" {
		// A bounce record of type SpamComplaint is a complaint.
		name = "SpamComplaint"
	}
	return postmarkOutcomes.result(event{name: name, id: id, messageID: ev.MessageID,
		hard: postmarkHard[ev.Type], detail: ev.Type}), nil
}

// postmarkOutcomes are the RecordTypes that are outcomes (not
// SubscriptionChange, …).
var postmarkOutcomes = outcomes{
	"Delivery":      events.ReportDelivered,
	"Bounce":        events.ReportBounced,
	"SpamComplaint": events.ReportComplained,
	"Open":          events.ReportOpened,
	"Click":         events.ReportClicked,
}

// verifyMailgun: a webhook posts {"signature":{"timestamp","token",
// "signature"},"event-data":{…}}; signature is the hex HMAC-SHA256, keyed
// by the webhook signing key, of timestamp followed by token. It covers
// neither the event nor its message, so, as Mailgun asks of a receiver,
// the timestamp must be within MaxSkew of now and the token is used once
// (Result.Once: the recorder refuses it on another body). The event's
// id is event-data.id, the message's its Message-Id header (the send
// recorded it with angle brackets, which the lookup tolerates). A
// temporary failure is not reported: Mailgun itself tries again.
func verifyMailgun(_ context.Context, r Request, _ Deps) (Result, error) {
	key := configString(r.Config, "webhookSigningKey")
	var ev struct {
		Signature struct {
			Timestamp string `json:"timestamp"`
			Token     string `json:"token"`
			Signature string `json:"signature"`
		} `json:"signature"`
		Data struct {
			ID       string `json:"id"`
			Event    string `json:"event"`
			Severity string `json:"severity"`
			Message  struct {
				Headers struct {
					MessageID string `json:"message-id"`
				} `json:"headers"`
			} `json:"message"`
			DeliveryStatus struct {
				Code json.Number `json:"code"`
			} `json:"delivery-status"`
		} `json:"event-data"`
	}
	if key == "" || json.Unmarshal(r.Body, &ev) != nil {
		return Result{}, ErrSignature
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ev.Signature.Timestamp + ev.Signature.Token))
	if ev.Signature.Token == "" || len(ev.Signature.Token) > MaxEventIDChars || !fresh(ev.Signature.Timestamp, r.Now) ||
		!hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(ev.Signature.Signature)) {
		return Result{}, ErrSignature
	}
	d := ev.Data
	if d.Event == "failed" && d.Severity != "permanent" {
		return Result{Once: ev.Signature.Token}, nil
	}
	res := mailgunOutcomes.result(event{name: d.Event, id: d.ID, messageID: strings.Trim(d.Message.Headers.MessageID, "<>"),
		hard: true, detail: d.DeliveryStatus.Code.String()})
	res.Once = ev.Signature.Token
	return res, nil
}

// mailgunOutcomes are Mailgun's events that are outcomes (not accepted,
// unsubscribed, stored, …); a failure that reaches them is permanent.
var mailgunOutcomes = outcomes{
	"delivered":  events.ReportDelivered,
	"failed":     events.ReportBounced,
	"complained": events.ReportComplained,
	"opened":     events.ReportOpened,
	"clicked":    events.ReportClicked,
}
