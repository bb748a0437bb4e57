package provider

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
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

// Post posts body to h.Endpoint with header, as the function Post does.
func (h HTTP) Post(ctx context.Context, header http.Header, body []byte) (Answer, error) {
	return Post(ctx, h.Client, h.Name, h.Endpoint, header, body)
}
