package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heraldhq/herald/apierr"
)

// clientTimeout bounds one call of a Client: longer than the service's
// in-flight wait plus a provider call (DefaultInFlightWait +
// DefaultSendTimeout).
const clientTimeout = 60 * time.Second

// maxAnswerBytes bounds the body of an answer a Client reads.
const maxAnswerBytes = 1 << 20

// Client delivers through POST /v1/deliver of a Herald API, with the
// internal token: the road of a process that does not hold the delivery
// service itself. Its answers are those of [Service.Deliver] on the other
// side: a Result, or an *Error that [Classify] reads as the service's own
// error (the same code, the same terminality) and that wraps the same
// sentinel. It is safe for concurrent use.
type Client struct {
	baseURL, token string
	http           *http.Client
}

// NewClient returns a Client of the API at baseURL (e.g.
// http://127.0.0.1:8080) authenticating with the internal token. conns is
// how many calls are expected at once (the engine's workers): each keeps an
// idle connection to the API between calls. Zero: 128. The Client owns its
// HTTP client; a call is bounded by 60 s.
func NewClient(baseURL, token string, conns int) *Client {
	if conns <= 0 {
		conns = 128
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 4 * conns
	t.MaxIdleConnsPerHost = conns
	return &Client{baseURL: baseURL, token: token, http: &http.Client{Timeout: clientTimeout, Transport: t}}
}

// Deliver delivers req for tenant through the API. A 200 is the Result;
// any other answer is an *Error with the answer's code (apierr.CodeDeliveryFailed when
// it has none): a code of a sentinel classifies as that sentinel, another
// code is terminal when the status is 422. A network failure is an *Error
// of apierr.CodeDeliveryUnreachable (transient), or ctx's error when ctx ended.
func (c *Client) Deliver(ctx context.Context, tenant string, req Request) (Result, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Result{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+"/v1/deliver", bytes.NewReader(body))
	if err != nil {
		return Result{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("x-herald-internal-token", c.token)
	hreq.Header.Set("x-herald-tenant-id", tenant)
	resp, err := c.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, &Error{Code: apierr.CodeDeliveryUnreachable, Message: err.Error()}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode == http.StatusOK {
		var res Result
		if err := json.Unmarshal(data, &res); err != nil {
			return Result{}, &Error{Code: apierr.CodeDeliveryInvalidAnswer, Message: err.Error()}
		}
		return res, nil
	}
	return Result{}, answerError(resp.StatusCode, data)
}

// answerError reads the error body of a non-200 answer.
func answerError(status int, data []byte) *Error {
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	_ = json.Unmarshal(data, &eb)
	e := &Error{Code: eb.Error.Code, Message: eb.Error.Message}
	if e.Code == "" {
		e.Code = apierr.CodeDeliveryFailed
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("delivery answered %d", status)
	}
	if kind, terminal, ok := sentinelOf(e.Code); ok {
		e.kind, e.Terminal = kind, terminal
	} else {
		// A failure of the API itself: 422 means the request cannot
		// succeed as it is (an id the log refuses); anything else (401,
		// 500, 503, ...) may pass later.
		e.Terminal = status == http.StatusUnprocessableEntity
	}
	return e
}
