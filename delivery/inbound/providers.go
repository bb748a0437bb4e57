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
	"github.com/heraldhq/herald/webhooksig"
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
	var rep Report
	switch status {
	case "delivered":
		rep.Status = events.ReportDelivered
	case "undelivered", "failed":
		rep.Status, rep.Detail = events.ReportFailed, form.Get("ErrorCode")
	case "read":
		rep.Status = events.ReportOpened
	default: // queued, sending, sent, accepted: not an outcome
		return Result{}, nil
	}
	rep.EventID, rep.MessageID = sid+":"+status, sid
	return Result{Reports: keep([]Report{rep})}, nil
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
	secret, err := webhooksig.ParseSecret(configString(r.Config, "webhookSecret"))
	if err != nil {
		return Result{}, ErrSignature
	}
	// Svix names the standard's three headers svix-*; either set works.
	id, ts, sig := r.Header.Get("svix-id"), r.Header.Get("svix-timestamp"), r.Header.Get("svix-signature")
	if id == "" {
		id, ts, sig = r.Header.Get(webhooksig.HeaderID), r.Header.Get(webhooksig.HeaderTimestamp), r.Header.Get(webhooksig.HeaderSignature)
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
	rep := Report{EventID: id, MessageID: ev.Data.EmailID}
	switch ev.Type {
	case "email.delivered":
		rep.Status = events.ReportDelivered
	case "email.bounced":
		rep.Status, rep.Bounce, rep.Detail = events.ReportBounced, events.BounceSoft, ev.Data.Bounce.SubType
		if ev.Data.Bounce.Type == "Permanent" {
			rep.Bounce = events.BounceHard
		}
	case "email.complained":
		rep.Status = events.ReportComplained
	case "email.opened":
		rep.Status = events.ReportOpened
	case "email.clicked":
		rep.Status = events.ReportClicked
	case "email.failed":
		rep.Status = events.ReportFailed
	default: // email.sent, email.delivery_delayed, …
		return Result{}, nil
	}
	return Result{Reports: keep([]Report{rep})}, nil
}

// SendGrid's Event Webhook signature headers.
const (
	SendGridSignatureHeader = "X-Twilio-Email-Event-Webhook-Signature"
	SendGridTimestampHeader = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// verifySendGrid: the Event Webhook posts a JSON array of events, signed
// with ECDSA (P-256, SHA-256) over the timestamp header followed by the
// body; the signature header is the base64 of its ASN.1 form, the
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
	if err != nil || len(sig) == 0 {
		return Result{}, ErrSignature
	}
	h := sha256.New()
	h.Write([]byte(r.Header.Get(SendGridTimestampHeader)))
	h.Write(r.Body)
	if !ecdsa.VerifyASN1(pub, h.Sum(nil), sig) {
		return Result{}, ErrSignature
	}
	var evs []struct {
		Event     string `json:"event"`
		EventID   string `json:"sg_event_id"`
		MessageID string `json:"sg_message_id"`
		Type      string `json:"type"`
		Status    string `json:"status"`
	}
	if json.Unmarshal(r.Body, &evs) != nil {
		return Result{}, ErrMalformed
	}
	var out []Report
	for _, e := range evs {
		rep := Report{EventID: e.EventID, MessageID: sendGridMessageID(e.MessageID)}
		switch e.Event {
		case "delivered":
			rep.Status = events.ReportDelivered
		case "bounce":
			// type "bounce" is a permanent refusal, "blocked" a temporary one.
			rep.Status, rep.Bounce, rep.Detail = events.ReportBounced, events.BounceHard, e.Status
			if e.Type == "blocked" {
				rep.Bounce = events.BounceSoft
			}
		case "dropped":
			rep.Status = events.ReportFailed
		case "spamreport":
			rep.Status = events.ReportComplained
		case "open":
			rep.Status = events.ReportOpened
		case "click":
			rep.Status = events.ReportClicked
		default: // processed, deferred, unsubscribe, group_…
			continue
		}
		out = append(out, rep)
	}
	return Result{Reports: keep(out)}, nil
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
	rep := Report{MessageID: ev.MessageID}
	at := ev.DeliveredAt + ev.ReceivedAt + ev.BouncedAt
	rep.EventID = ev.RecordType + ":" + ev.MessageID + ":" + at
	if ev.ID != "" && ev.ID != "0" {
		rep.EventID = ev.RecordType + ":" + ev.ID.String()
	}
	switch ev.RecordType {
	case "Delivery":
		rep.Status = events.ReportDelivered
	case "Bounce":
		if ev.Type == "SpamComplaint" {
			rep.Status = events.ReportComplained
			break
		}
		rep.Status, rep.Bounce, rep.Detail = events.ReportBounced, events.BounceSoft, ev.Type
		if postmarkHard[ev.Type] {
			rep.Bounce = events.BounceHard
		}
	case "SpamComplaint":
		rep.Status = events.ReportComplained
	case "Open":
		rep.Status = events.ReportOpened
	case "Click":
		rep.Status = events.ReportClicked
	default: // SubscriptionChange, …
		return Result{}, nil
	}
	return Result{Reports: keep([]Report{rep})}, nil
}

// verifyMailgun: a webhook posts {"signature":{"timestamp","token",
// "signature"},"event-data":{…}}; signature is the hex HMAC-SHA256, keyed
// by the webhook signing key, of timestamp followed by token. The event's
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
	if ev.Signature.Token == "" || !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(ev.Signature.Signature)) {
		return Result{}, ErrSignature
	}
	d := ev.Data
	rep := Report{EventID: d.ID, MessageID: strings.Trim(d.Message.Headers.MessageID, "<>")}
	switch d.Event {
	case "delivered":
		rep.Status = events.ReportDelivered
	case "failed":
		if d.Severity != "permanent" {
			return Result{}, nil
		}
		rep.Status, rep.Bounce, rep.Detail = events.ReportBounced, events.BounceHard, d.DeliveryStatus.Code.String()
	case "complained":
		rep.Status = events.ReportComplained
	case "opened":
		rep.Status = events.ReportOpened
	case "clicked":
		rep.Status = events.ReportClicked
	default: // accepted, unsubscribed, stored, …
		return Result{}, nil
	}
	return Result{Reports: keep([]Report{rep})}, nil
}
