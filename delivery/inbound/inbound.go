// Package inbound hears back from providers: what became of a message
// after the provider accepted it (delivered, bounced, complained, opened,
// clicked, failed). Each provider posts its events to the channel's
// inbound URL, {public}/in/{token}; this package makes and opens those
// tokens and, per channel key, verifies a request the way the provider
// documents and maps its events onto Reports. It is pure: it appends
// nothing and reads no projection (package delivery records the reports).
//
// A provider that signs its events is heard only when the channel holds
// the key: Twilio (X-Twilio-Signature, the authToken), Resend (Svix
// headers, webhookSecret), SendGrid (ECDSA, webhookPublicKey), Mailgun
// (HMAC, webhookSigningKey), Vonage (the sig of its SMS API delivery
// receipts, signatureSecret). SES
// posts through SNS, whose messages carry an RSA signature checked with
// Amazon's certificate. Postmark signs nothing: the unguessable token of
// the URL is its check.
package inbound

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/events"
)

// ErrSignature: the request is not the provider's (no key configured, a
// bad or stale signature). Nothing of it may be recorded.
var ErrSignature = errors.New("inbound: the request's signature does not verify")

// ErrMalformed: the request is signed but not a payload the provider
// documents.
var ErrMalformed = errors.New("inbound: the payload is not one the provider documents")

// Report is one event of a provider about one message.
type Report struct {
	// EventID is the provider's id of the event: a provider's retries of
	// one event carry the same, so it is recorded once.
	EventID string
	// MessageID is the provider's id of the message, as the send recorded
	// it (providerMessageId).
	MessageID string
	// Status is one of the events.Report constants.
	Status string
	// Bounce is "hard" or "soft" for a bounce.
	Bounce string
	// Detail is a short code of the provider (an error code); never text
	// that could quote the recipient (see cleanDetail).
	Detail string
}

// Result is what a verified request holds.
type Result struct {
	Reports []Report
	// Confirm is the URL to GET to confirm an SNS subscription (an
	// https URL on an allowed Amazon host); empty otherwise.
	Confirm string
	// Once is the provider's one-use value of a request whose signature
	// covers no event (Mailgun's token): whoever records the reports must
	// refuse a second request of another body with the same value, for
	// MaxSkew on either side of its signed time (see ErrReplayed).
	// Empty: the signature covers the body, or there is none.
	Once string
}

// MaxSkew is how far the time a provider signed may be from the time its
// request comes, either way: a request signed further off is refused
// (Mailgun's timestamp, SendGrid's; Resend's Svix headers have the same
// standardwebhooks.Tolerance).
const MaxSkew = 5 * time.Minute

// ErrReplayed: a request carries a one-use value (Result.Once) that an
// earlier request of another body used. It is an ErrSignature.
var ErrReplayed = fmt.Errorf("%w: its token was used before by another request", ErrSignature)

// fresh reports whether ts, a Unix time in whole seconds as providers
// sign it, is within MaxSkew of now.
func fresh(ts string, now time.Time) bool {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ts != strconv.FormatInt(sec, 10) {
		return false
	}
	d := now.Sub(time.Unix(sec, 0))
	return d <= MaxSkew && d >= -MaxSkew
}

// Request is a provider's request to an inbound URL.
type Request struct {
	// URL is the inbound URL the provider was given and called (Twilio
	// signs it): the public URL, the path, and the query if any.
	URL    string
	Header http.Header
	Body   []byte
	// Config is the channel's opened config (secret fields in clear).
	Config map[string]any
	// Now is the time the request came.
	Now time.Time
}

// Deps are what a verifier may reach outside the request.
type Deps struct {
	// SNSCertificate returns the certificate at an SNS SigningCertURL,
	// already checked to be an https URL of an allowed Amazon host
	// (AllowedSNSURL). Zero: SES events are refused.
	SNSCertificate func(ctx context.Context, certURL string) (*x509.Certificate, error)
}

// Verifier verifies a request to a channel's inbound URL and maps its
// events. Errors: ErrSignature, ErrMalformed.
type Verifier func(ctx context.Context, r Request, d Deps) (Result, error)

// verifiers are the providers Herald hears back from, by channel key.
var verifiers = map[string]Verifier{
	"sms-twilio":     verifyTwilio,
	"email-resend":   verifyResend,
	"email-sendgrid": verifySendGrid,
	"email-postmark": verifyPostmark,
	"email-mailgun":  verifyMailgun,
	"email-ses":      verifySES,
	"sms-vonage":     verifyVonage,
}

// For returns the verifier of a channel key, and whether it has one.
func For(channelKey string) (Verifier, bool) {
	v, ok := verifiers[channelKey]
	return v, ok
}

// configString is a string field of the config, "" when absent.
func configString(config map[string]any, name string) string {
	s, _ := config[name].(string)
	return s
}

// MaxDetailChars bounds a report's detail.
const MaxDetailChars = 64

// cleanDetail keeps a provider's short code if it is one: at most
// MaxDetailChars letters, digits and ._- (an address or a sentence is
// dropped, so a report never quotes the recipient).
func cleanDetail(s string) string {
	if len(s) > MaxDetailChars {
		return ""
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-", c)) {
			return ""
		}
	}
	return s
}

// MaxEventIDChars bounds a provider's event id (and message id).
const MaxEventIDChars = 512

// keep drops the reports whose ids are empty or out of bound.
func keep(rs []Report) []Report {
	out := rs[:0]
	for _, r := range rs {
		if r.EventID == "" || r.MessageID == "" || len(r.EventID) > MaxEventIDChars || len(r.MessageID) > MaxEventIDChars {
			continue
		}
		r.Detail = cleanDetail(r.Detail)
		out = append(out, r)
	}
	return out
}

// event is one event of a provider as its verifier reads it, before the
// provider's outcomes name what it says of the message.
type event struct {
	name      string // the provider's name of what happened: "email.bounced", "undelivered", …
	id        string // the provider's id of the event (Report.EventID)
	messageID string
	hard      bool   // on a bounce: the address refuses mail for good
	detail    string // on a bounce or a failure: the provider's code
}

// outcomes maps a provider's event names onto report statuses
// (events.Report…). A name it lacks is no outcome (sent, queued,
// delayed, …): it reports nothing.
type outcomes map[string]string

// result is the Result of evs: a report for each event that is an
// outcome, its bounce hard or soft, the detail kept on a bounce or a
// failure only, and the reports kept (see keep).
func (o outcomes) result(evs ...event) Result {
	var out []Report
	for _, e := range evs {
		status, ok := o[e.name]
		if !ok {
			continue
		}
		rep := Report{EventID: e.id, MessageID: e.messageID, Status: status}
		switch status {
		case events.ReportBounced:
			rep.Bounce, rep.Detail = events.BounceSoft, e.detail
			if e.hard {
				rep.Bounce = events.BounceHard
			}
		case events.ReportFailed:
			rep.Detail = e.detail
		}
		out = append(out, rep)
	}
	return Result{Reports: keep(out)}
}
