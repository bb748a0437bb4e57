// Package testapi is the client tests speak Herald's REST API with: a
// bearer token per Client, JSON request bodies, and answers outside 2xx
// decoded from the contract's error body (CONTRACT.md §2) into *Error.
//
// Send returns any answer as it came (status, header, body) and fails
// only when no answer came; Do decodes a 2xx answer and turns any other
// into an *Error. NewRequest builds the authorised request for a test that
// needs the response itself (a stream) or a header of its own.
package testapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// DefaultTimeout bounds a request of a Client made by New, its answer's
// body included.
const DefaultTimeout = 30 * time.Second

var defaultHTTP = &http.Client{Timeout: DefaultTimeout}

// Client sends requests to one API with one bearer token. Its fields may
// be set after New and before the first request; it is then safe for
// concurrent use.
type Client struct {
	// BaseURL is the API's base URL, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// Key is the bearer token sent as Authorization; "" sends none.
	Key string
	// HTTP sends the requests. New sets a client shared by every Client
	// with DefaultTimeout.
	HTTP *http.Client
}

// New returns a client of the API at baseURL that authenticates with key
// ("" for none).
func New(baseURL, key string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Key: key, HTTP: defaultHTTP}
}

// WithKey returns a copy of c that authenticates with key.
func (c *Client) WithKey(key string) *Client {
	cp := *c
	cp.Key = key
	return &cp
}

// Response is an answer as it came.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Err is nil for a 2xx answer, else the *Error its body describes.
func (r Response) Err(method, path string) error {
	if r.Status >= 200 && r.Status < 300 {
		return nil
	}
	e := &Error{Method: method, Path: path, Status: r.Status, Body: r.Body}
	var b struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details []FieldProblem `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(r.Body, &b) == nil {
		e.Code, e.Message, e.Details = b.Error.Code, b.Error.Message, b.Error.Details
	}
	return e
}

// ErrorCode is the error.code of the body, or "" when it has none.
func (r Response) ErrorCode() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Error.Code
}

// JSON decodes the body into v and fails tb when it cannot.
func (r Response) JSON(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as a JSON object and fails tb when it is not one.
func (r Response) Map(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	r.JSON(tb, &m)
	return m
}

// FieldProblem is one entry of an error body's details.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// Error is an answer outside 2xx. Code, Message and Details come from
// the contract's error body; they are empty when the body is not one
// (Body keeps it as it came).
type Error struct {
	Method, Path string
	Status       int
	Code         string
	Message      string
	Details      []FieldProblem
	Body         []byte
}

func (e *Error) Error() string {
	path := e.Path
	if len(path) > 80 {
		path = path[:80] + "…"
	}
	if e.Code != "" {
		return fmt.Sprintf("%s %s: %d %s: %s", e.Method, path, e.Status, e.Code, e.Message)
	}
	body := e.Body
	if len(body) > 300 {
		body = body[:300]
	}
	return fmt.Sprintf("%s %s: %d %s", e.Method, path, e.Status, body)
}

// NewRequest returns the request Send would send: path is appended to
// BaseURL; Authorization carries Key when it is set. body may be nil (no
// body), a string or []byte (sent as it is; a nil []byte is no body) or
// any other value (marshalled to JSON); with a body, Content-Type is
// application/json.
func (c *Client) NewRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		if b != nil {
			rd = bytes.NewReader(b)
		}
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Send sends a request (see NewRequest for body) and returns the answer
// whatever its status. The error is a failure to get an answer.
func (c *Client) Send(ctx context.Context, method, path string, body any) (Response, error) {
	req, err := c.NewRequest(ctx, method, path, body)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Do sends a request (see NewRequest for body) and returns the answer's
// status. A 2xx answer's body is decoded into out unless out is nil or the
// body empty; any other status is an *Error. Without an answer the status
// is 0.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	r, err := c.Send(ctx, method, path, body)
	if err != nil {
		return 0, err
	}
	if err := r.Err(method, path); err != nil {
		return r.Status, err
	}
	if out != nil && len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return r.Status, fmt.Errorf("%s %s: decode %.300s: %w", method, path, r.Body, err)
		}
	}
	return r.Status, nil
}

// Tenant is the answer of POST /v1/admin/tenants.
type Tenant struct {
	TenantID string `json:"tenantId"`
	Name     string `json:"name"`
	APIKey   string `json:"apiKey"`
}

// CreateTenant creates a tenant; c must hold the admin token. An answer
// other than 201 is an error.
func (c *Client) CreateTenant(ctx context.Context, name string) (Tenant, error) {
	return expectAs[Tenant](ctx, c, http.MethodPost, "/v1/admin/tenants", map[string]string{"name": name}, http.StatusCreated)
}

// Binding is the answer of PUT /v1/bridge.
type Binding struct {
	WebhookURL    string `json:"webhookUrl"`
	SigningSecret string `json:"signingSecret"`
}

// BindBridge points the tenant's Bridge at webhookURL (PUT /v1/bridge),
// which issues a new signing secret. An answer other than 200 is an error.
func (c *Client) BindBridge(ctx context.Context, webhookURL string) (Binding, error) {
	return expectAs[Binding](ctx, c, http.MethodPut, "/v1/bridge", map[string]string{"webhookUrl": webhookURL}, http.StatusOK)
}

// expectAs is expect decoding the answer into a T: the zero T with an
// error.
func expectAs[T any](ctx context.Context, c *Client, method, path string, body any, want int) (T, error) {
	var out T
	if err := c.expect(ctx, method, path, body, &out, want); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// expect is Do that also refuses a 2xx answer other than want.
func (c *Client) expect(ctx context.Context, method, path string, body, out any, want int) error {
	status, err := c.Do(ctx, method, path, body, out)
	if err == nil && status != want {
		err = fmt.Errorf("%s %s: %d, want %d", method, path, status, want)
	}
	return err
}

// All returns every item of a list (CONTRACT.md §2: {"data":[…],
// "nextCursor":…}), following the cursor from page to page. path may
// carry a query (limit, filters) of its own.
func All[T any](ctx context.Context, c *Client, path string) ([]T, error) {
	var all []T
	cursor := ""
	for {
		p := path
		if cursor != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Data       []T     `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		if _, err := c.Do(ctx, http.MethodGet, p, nil, &page); err != nil {
			return all, err
		}
		all = append(all, page.Data...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}
