// Package ses is the email provider "email-ses": Amazon SES v2 SendEmail
// with the raw message package delivery/email composes (the same bytes the
// SMTP provider sends), through aws-sdk-go-v2/service/sesv2.
//
// # Basics
//
// New builds the provider from a channel's opened config: region,
// accessKeyId, secretAccessKey and fromEmail are required, fromName and
// endpoint optional. endpoint ("scheme://host[:port]") replaces the
// regional SES endpoint, for a local server speaking the SES v2 API. The
// request is signed with Signature Version 4 by the static key; it goes
// through provider.Deps.HTTPClient and the SDK retries nothing (delivery
// decides retries and failover).
//
// Send posts the message to /v2/email/outbound-emails as Content.Raw, with
// FromEmailAddress and Destination.ToAddresses set, and returns the
// MessageId SES answers. The message's Message-ID header is derived from
// the tenant and the idempotency key (email.MessageID), the same on every
// try: SES accepts no idempotency key.
//
// # Errors
//
// Each failure matches one provider kind:
//
//   - provider.ErrRejected: SES refused the message itself (400
//     MessageRejected, e.g. an illegal address, or BadRequestException:
//     the same request fails everywhere), or the message does not compose
//     (an invalid replyTo or address).
//   - provider.ErrNotSent: any other answer of SES (401/403 signature or
//     access, 429 TooManyRequests and the other throttling answers, 5xx,
//     account suspended, sending paused, an unverified MAIL FROM domain),
//     or a failure before the request was written (a refused connection,
//     TLS, ctx ended).
//   - provider.ErrOutcomeUnknown: no answer after the request was written
//     (a timeout, a broken connection), or a 2xx answer that does not
//     decode: SES may have accepted the message.
//
// The public message holds the HTTP status and SES's error code, never
// SES's text; that goes to provider.Deps.Logger.
package ses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/egress"
)

// ChannelKey is the catalog entry this package serves.
const ChannelKey = "email-ses"

var _ provider.New = New

// Provider sends email through one SES account. It is safe for concurrent
// use.
type Provider struct {
	client              *sesv2.Client
	fromEmail, fromName string
	logger              *slog.Logger
	now                 func() time.Time
}

// New builds the provider from config (see the package doc). It fails
// when a required field is missing or a field has the wrong type or form;
// the error names the field, never a secret's value.
func New(config map[string]any, deps provider.Deps) (provider.Provider, error) {
	var errs []error
	str := func(key string, required bool) string {
		v, ok := config[key]
		s, isString := v.(string)
		switch {
		case ok && !isString:
			errs = append(errs, fmt.Errorf("ses: %s must be a string", key))
		case required && s == "":
			errs = append(errs, fmt.Errorf("ses: %s is required", key))
		}
		return s
	}
	region, keyID, secret := str("region", true), str("accessKeyId", true), str("secretAccessKey", true)
	fromEmail, fromName, endpoint := str("fromEmail", true), str("fromName", false), str("endpoint", false)
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") ||
			u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("ses: endpoint %.200q is not scheme://host[:port]", endpoint))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if deps.HTTPClient == nil {
		deps.HTTPClient = http.DefaultClient
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	opts := sesv2.Options{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, ""),
		HTTPClient:  deps.HTTPClient,
		Retryer:     aws.NopRetryer{},
	}
	if endpoint != "" {
		opts.BaseEndpoint = aws.String(endpoint)
	}
	return &Provider{client: sesv2.New(opts), fromEmail: fromEmail, fromName: fromName, logger: deps.Logger, now: deps.Now}, nil
}

// Send sends m, whose Content is a wire.EmailContent, to m.To and returns
// SES's MessageId. Its error matches one provider kind (see the package
// doc).
func (p *Provider) Send(ctx context.Context, m provider.Message) (string, error) {
	var content wire.EmailContent
	if err := json.Unmarshal(m.Content, &content); err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "ses: the content is not email content")
	}
	raw, err := email.Compose(email.Message{
		FromEmail: p.fromEmail, FromName: p.fromName, To: m.To,
		MessageID: email.MessageID(m.Tenant, m.IdempotencyKey, p.fromEmail),
		Date:      p.now(), Content: content, ListUnsubscribe: m.ListUnsubscribe,
	})
	if err != nil {
		return "", provider.Failf(provider.ErrRejected, err, "%s", err.Error()) // names the field, holds no secret
	}

	var wrote atomic.Bool
	traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		// A request whose write failed cannot have been accepted: only a
		// whole request makes the outcome unknown (as provider.DoHTTP).
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	})
	out, err := p.client.SendEmail(traced, &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(p.fromEmail),
		Destination:      &types.Destination{ToAddresses: []string{m.To}},
		Content:          &types.EmailContent{Raw: &types.RawMessage{Data: raw}},
	})
	if err != nil {
		err = classify(err, wrote.Load())
		p.logger.WarnContext(ctx, "ses send failed", "tenant", m.Tenant, "runId", m.RunID, "stepId", m.StepID, "error", egress.LogText(err))
		return "", err
	}
	return aws.ToString(out.MessageId), nil
}

// classify gives err, a failed SendEmail, its provider kind. wrote reports
// whether the request had been written to the connection.
func classify(err error, wrote bool) *provider.Error {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() == 0 {
		if wrote {
			return provider.Failf(provider.ErrOutcomeUnknown, err, "ses: no answer after the request was sent")
		}
		return provider.Failf(provider.ErrNotSent, err, "ses: the request could not be sent")
	}
	status := re.HTTPStatusCode()
	code := "unknown"
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		code = publicCode(ae.ErrorCode())
	}
	public := fmt.Sprintf("ses: answered %d %s", status, code)
	var rejected *types.MessageRejected
	var bad *types.BadRequestException
	switch {
	case errors.As(err, &rejected), errors.As(err, &bad):
		return provider.Failf(provider.ErrRejected, err, "%s", public)
	case status/100 == 2:
		// Accepted, but the answer did not decode.
		return provider.Failf(provider.ErrOutcomeUnknown, err, "%s", public)
	}
	return provider.Failf(provider.ErrNotSent, err, "%s", public)
}

// publicCode keeps an error code fit to show a tenant: a name of at most
// 64 letters, digits and dots. A server at a custom endpoint is not SES
// and may answer anything.
func publicCode(code string) string {
	if code == "" || len(code) > 64 || strings.ContainsFunc(code, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.')
	}) {
		return "unknown"
	}
	return code
}
