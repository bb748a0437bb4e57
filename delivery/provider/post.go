package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
)

// MaxAnswer bounds how much of a provider's answer is read.
const MaxAnswer = 1 << 20

// Answer is what a provider answered over HTTP: its status and at most
// MaxAnswer bytes of its body. ReadErr is set when the body could not be
// read in full; what that means depends on the status, which the provider
// classifies.
type Answer struct {
	Status int
	// Header is the answer's header (a provider that gives its message id
	// there: SendGrid's X-Message-Id, APNs's apns-id).
	Header  http.Header
	Body    []byte
	ReadErr error
}

// Decode decodes the answer's body as JSON into v. It fails without
// decoding when the body could not be read in full (the cause is then
// ReadErr): a provider reads its id only from a whole answer.
func (a Answer) Decode(v any) error {
	if a.ReadErr != nil {
		return a.ReadErr
	}
	return json.Unmarshal(a.Body, v)
}

// RefusalKind is the kind of a failure answer of an API whose only
// refusals for good are 400 (a request it will never take) and 413 (a
// request too large): ErrRejected for those, and ErrNotSent for every
// other status (401, 403, 404, 429, 5xx), which proves nothing was sent.
func RefusalKind(status int) error {
	if status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge {
		return ErrRejected
	}
	return ErrNotSent
}

// Post is the one road of the HTTP providers: it posts body to endpoint
// with header through DoHTTP (whose errors it returns as they are), then
// reads and closes the answer. name is the provider's, for the error of an
// endpoint that cannot carry a request.
func Post(ctx context.Context, client *http.Client, name, endpoint string, header http.Header, body []byte) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Answer{}, Failf(ErrNotSent, nil, "%s endpoint unusable", name)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := DoHTTP(client, req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b, ReadErr: readErr}, nil
}

// HTTP is what a provider whose API is HTTP holds to reach it: its name
// (in the errors of Post), the endpoint it posts to, and the client and
// logger of its Deps. Such a provider embeds it.
type HTTP struct {
	Name     string
	Endpoint string
	Client   *http.Client
	Log      *slog.Logger
}

// NewHTTP is the HTTP of the provider name, posting to endpoint with
// deps's client and logger.
func NewHTTP(name, endpoint string, deps Deps) HTTP {
	return HTTP{Name: name, Endpoint: endpoint, Client: deps.HTTPClient, Log: deps.Logger}
}

// PostJSON posts v, encoded as JSON, to h.Endpoint with header, as Post
// does; Content-Type is application/json unless header sets its own. A v
// that cannot be encoded is refused for good (ErrRejected), unsent.
func (h HTTP) PostJSON(ctx context.Context, header http.Header, v any) (Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, Failf(ErrRejected, err, "%s: the message cannot be encoded", h.Name)
	}
	all := http.Header{"Content-Type": {"application/json"}}
	maps.Copy(all, header)
	return h.Post(ctx, all, b)
}

// NewWebhookHTTP is the HTTP of the provider name posting to a webhook
// its channel names (a chat webhook): config's webhookUrl, with the
// scheme and host of apiBaseUrl when set (see ConfigWebhookURL), and the
// parameters of query set on its query.
func NewWebhookHTTP(name string, config map[string]any, deps Deps, query url.Values) (HTTP, error) {
	u, err := ConfigWebhookURL(config, "webhookUrl", "apiBaseUrl")
	if err != nil {
		return HTTP{}, err
	}
	if len(query) > 0 {
		q := u.Query()
		maps.Copy(q, query)
		u.RawQuery = q.Encode()
	}
	return NewHTTP(name, u.String(), deps), nil
}

// Post posts body to h.Endpoint with header, as the function Post does.
func (h HTTP) Post(ctx context.Context, header http.Header, body []byte) (Answer, error) {
	return Post(ctx, h.Client, h.Name, h.Endpoint, header, body)
}
