package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/mail"
	"net/url"
	"strings"
	"sync/atomic"
)

// DoHTTP sends req with client and returns the provider's answer. When no
// answer comes, it tells whether the request may have reached the provider:
// an error before the request was written in full (a refused connection, a
// TLS failure, a context done before the request left, an egress refusal)
// is ErrNotSent; one after (a timeout or a broken connection while waiting
// for the answer) is ErrOutcomeUnknown. Either error's cause is the
// client's error, so errors.Is(err, context.DeadlineExceeded) and the like
// hold; its Public text names neither the URL nor the cause. The caller
// reads and closes the answer's body, and classifies its status.
func DoHTTP(client *http.Client, req *http.Request) (*http.Response, error) {
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := client.Do(req)
	if err == nil {
		return resp, nil
	}
	cause := err
	var uerr *url.Error
	if errors.As(err, &uerr) {
		// The URL may carry a tenant's path; the operator's log has the
		// request, the error keeps only what went wrong.
		cause = uerr.Err
	}
	if wrote.Load() {
		return nil, Failf(ErrOutcomeUnknown, cause, "no answer after the request was sent")
	}
	if ctxErr := req.Context().Err(); ctxErr != nil && !errors.Is(cause, ctxErr) {
		cause = errors.Join(ctxErr, cause)
	}
	return nil, Failf(ErrNotSent, cause, "the request could not be sent")
}

// BaseURL checks a provider's base URL override (CONTRACT.md §10
// `apiBaseUrl`/`endpoint`): scheme://host[:port] with the scheme http or
// https, and nothing after the host. It returns the URL without a trailing
// slash, to which the provider appends its documented path; raw "" gives
// def. The error names the field, not the value.
func BaseURL(field, raw, def string) (string, error) {
	if raw == "" {
		return def, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s: want scheme://host[:port]", field)
	}
	return u.Scheme + "://" + u.Host, nil
}

// ConfigBaseURL reads the optional base URL override config[field] and
// checks it as BaseURL does: def when absent.
func ConfigBaseURL(config map[string]any, field, def string) (string, error) {
	raw, err := ConfigString(config, field, false)
	if err != nil {
		return "", err
	}
	return BaseURL(field, raw, def)
}

// ConfigString returns config[field] when it is a string, "" when absent.
// A value of another type is an error naming the field.
func ConfigString(config map[string]any, field string, required bool) (string, error) {
	v, ok := config[field]
	if !ok || v == nil {
		if required {
			return "", fmt.Errorf("%s: required", field)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string", field)
	}
	if required && s == "" {
		return "", fmt.Errorf("%s: required", field)
	}
	return s, nil
}

// ConfigWebhookURL reads a provider's webhook URL, config[field] (required:
// an absolute http(s) URL, no user info), and the optional base URL
// override config[baseField]: when set, it replaces the webhook URL's
// scheme://host[:port], keeping its path and query (a test server, a
// proxy). The errors name the fields, never the URL, whose path holds the
// webhook's token.
func ConfigWebhookURL(config map[string]any, field, baseField string) (*url.URL, error) {
	raw, err := ConfigString(config, field, true)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("%s: want an absolute http(s) URL", field)
	}
	base, err := ConfigBaseURL(config, baseField, "")
	if err != nil {
		return nil, err
	}
	if base != "" {
		b, _ := url.Parse(base) // checked by ConfigBaseURL
		u.Scheme, u.Host = b.Scheme, b.Host
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// ConfigFrom reads an email provider's sender, the fields fromEmail
// (required, a bare address) and fromName (optional), as the From its API
// takes: "Name <address>" (the name quoted or encoded as RFC 5322 and
// 2047 need) or the bare address.
func ConfigFrom(config map[string]any) (string, error) {
	addr, err := ConfigString(config, "fromEmail", true)
	if err != nil {
		return "", err
	}
	if a, err := mail.ParseAddress(addr); err != nil || a.Address != addr {
		return "", fmt.Errorf("fromEmail: not a bare address")
	}
	name, err := ConfigString(config, "fromName", false)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(name, "\r\n") {
		return "", fmt.Errorf("fromName: contains a line break")
	}
	if name == "" {
		return addr, nil
	}
	return (&mail.Address{Name: name, Address: addr}).String(), nil
}
