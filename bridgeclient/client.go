package bridgeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/egress"
)

// DefaultClientTimeout bounds one call of a [Client] whose Timeout is zero.
const DefaultClientTimeout = 30 * time.Second

// Client calls tenant Bridges on behalf of the engine. Every call is a POST
// signed afresh with the current time (see [wire.Sign]); a call whose body this
// Client already sent with that second's timestamp is signed with the next
// second, so that no two of its requests are byte-identical (a [bridge.Serve]
// handler refuses the second as a replay). The zero Client is ready to
// use; a Client is safe for concurrent use and must not be copied after
// first use.
type Client struct {
	// HTTP sends the requests; its CheckRedirect is ignored: no redirect
	// is ever followed (a 3xx is a refusal). Nil: an http.Client on
	// http.DefaultTransport.
	HTTP *http.Client
	// Timeout bounds each call, on top of the ctx deadline. Zero or
	// negative: DefaultClientTimeout.
	Timeout time.Duration
	// Now is the clock of the signature timestamps. Nil: time.Now.
	Now func() time.Time
	// sent keeps the Client from signing two identical requests in one
	// second: a Bridge would refuse the second as a replay.
	sent sent
	// Logger hears, at Warn, the detail of every failed call (the Bridge's
	// error message, the network error), which the errors and outcomes
	// returned do not carry. Nil: slog.Default().
	Logger *slog.Logger
}

// Execute asks the Bridge at url to advance a run, signing with secret, and
// classifies the answer (see [Outcome]). An empty req.Payload is sent as {},
// nil req.Steps as [], an empty step output and a nil req.Subscriber as null.
//
// The error is non-nil only when no call could be judged: req does not
// encode, url is not a valid request URL, or ctx ended (ctx.Err() is
// returned). Every answer of the Bridge and every network failure, the
// Client's own Timeout included, is an Outcome.
func (c *Client) Execute(ctx context.Context, url, secret string, req wire.ExecuteRequest) (Outcome, error) {
	o, err := c.call(ctx, url, secret, wire.ActionExecute, req)
	if err == nil && o.Kind == OutcomePreviewNeeds {
		o = invalidAnswer(Outcome{HTTPStatus: o.HTTPStatus}, `status "preview_needs" answering an execute request`)
	}
	return o, err
}

// Preview asks the Bridge at url to preview req.StepID of a run, as
// Execute asks it to advance one (action preview): the Outcome is the
// previewed step (OutcomeStep), OutcomePreviewNeeds naming the run step
// that needs a sample (Outcome.StepID), OutcomeCompleted when the code
// does not reach the step, or a failure classified as Execute's.
func (c *Client) Preview(ctx context.Context, url, secret string, req wire.ExecuteRequest) (Outcome, error) {
	return c.call(ctx, url, secret, wire.ActionPreview, req)
}

// encodeRun encodes a request about one run (execute, preview, check):
// an absent payload is {}, an absent step output null.
func encodeRun(action wire.Action, req wire.ExecuteRequest) ([]byte, error) {
	if len(req.Payload) == 0 {
		req.Payload = json.RawMessage("{}")
	}
	steps := make([]wire.CompletedStep, len(req.Steps))
	for i, s := range req.Steps {
		if len(s.Output) == 0 {
			s.Output = json.RawMessage("null")
		}
		steps[i] = s
	}
	req.Steps = steps
	body, err := wire.Marshal(wire.Request{Action: action, ExecuteRequest: &req})
	if err != nil {
		return nil, fmt.Errorf("bridge: encoding the %s request: %w", action, err)
	}
	return body, nil
}

// call is Execute's and Preview's request.
func (c *Client) call(ctx context.Context, url, secret string, action wire.Action, req wire.ExecuteRequest) (Outcome, error) {
	body, err := encodeRun(action, req)
	if err != nil {
		return Outcome{}, err
	}
	rep, err := c.post(ctx, url, secret, body)
	if err != nil {
		return Outcome{}, err
	}
	var o Outcome
	switch {
	case rep.err != nil:
		o = unreachable(rep.status, rep.err)
	case rep.tooLarge:
		o = Outcome{Kind: OutcomeTerminal, HTTPStatus: rep.status, Code: apierr.CodeInvalidStep,
			Message: fmt.Sprintf("the bridge answered more than %d bytes", MaxAnswerBytes)}
	default:
		o = outcomeOf(rep.status, rep.body)
	}
	if o.Detail != "" {
		c.logger().Warn("bridge: call failed", "action", action, "runId", req.RunID, "host", hostOf(url),
			"status", o.HTTPStatus, "code", o.Code, "detail", o.Detail)
	}
	return o, nil
}

// Discover asks the Bridge at url for its workflows. It does not check their
// ids (see bridge.ValidWorkflowID). Errors: ctx.Err() when ctx ended, an
// invalid url, or an error wrapping [ErrUnreachable] (no answer) or
// [ErrRejected] (another status than 200, or a body that is not a discover
// answer), whose message names the status.
func (c *Client) Discover(ctx context.Context, url, secret string) ([]wire.WorkflowInfo, error) {
	var a wire.DiscoverAnswer
	if err := c.ask(ctx, url, secret, wire.ActionDiscover, &a); err != nil {
		return nil, err
	}
	if a.Workflows == nil {
		return nil, rejected(http.StatusOK, "a discover answer without workflows")
	}
	return a.Workflows, nil
}

// Health asks the Bridge at url whether it is up and signed requests pass.
// Its errors are those of [Client.Discover].
func (c *Client) Health(ctx context.Context, url, secret string) (wire.HealthAnswer, error) {
	var a wire.HealthAnswer
	if err := c.ask(ctx, url, secret, wire.ActionHealth, &a); err != nil {
		return wire.HealthAnswer{}, err
	}
	if a.Status != wire.StatusOK {
		return wire.HealthAnswer{}, rejected(http.StatusOK, "a health status other than ok")
	}
	return a, nil
}

// Errors of [Client.Discover] and [Client.Health]. [Client.Execute] reports
// the same situations as an [Outcome] instead. The message of an error that
// wraps one of them is safe to show the tenant, like [Outcome.Message]: a
// rejection reads "bridge answered <status>: <reason>".
var (
	// ErrUnreachable: no answer came back (connection refused, DNS, TLS,
	// timeout), or the egress policy refused the address.
	ErrUnreachable = errors.New("bridge unreachable")
	// ErrRejected: the Bridge answered with a status other than 200, or with
	// a body that is not the expected answer.
	ErrRejected = errors.New("bridge rejected the call")
)

// callError is an error of a health or discover call: its message is the
// tenant's, and it wraps ErrUnreachable or ErrRejected.
type callError struct {
	kind error
	msg  string
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() error { return e.kind }

// rejected is the error of a call the Bridge answered with status, for a
// fixed reason.
func rejected(status int, reason string) error {
	return &callError{ErrRejected, fmt.Sprintf("bridge answered %d: %s", status, reason)}
}

// ask makes a health or discover call and decodes its 200 answer into v.
func (c *Client) ask(ctx context.Context, url, secret string, action wire.Action, v any) error {
	body, _ := wire.Marshal(wire.Request{Action: action}) // a string field always encodes
	rep, err := c.post(ctx, url, secret, body)
	var o Outcome
	switch {
	case err != nil:
		return err
	case rep.err != nil:
		o = unreachable(rep.status, rep.err)
		err = &callError{ErrUnreachable, o.Message}
	case rep.tooLarge:
		o = Outcome{HTTPStatus: rep.status}
		err = rejected(rep.status, fmt.Sprintf("the answer is over %d bytes", MaxAnswerBytes))
	case rep.status != http.StatusOK:
		// The status alone: the Bridge's own message of a 500 is for a
		// run's error (a callback threw), not for a sync.
		o = outcomeOf(rep.status, rep.body)
		err = &callError{ErrRejected, answered(rep.status)}
	default:
		if uerr := json.Unmarshal(rep.body, v); uerr != nil {
			o = Outcome{HTTPStatus: rep.status, Detail: clip(uerr.Error())}
			err = rejected(rep.status, fmt.Sprintf("not a %s answer", action))
		}
	}
	if err != nil {
		c.logger().Warn("bridge: call failed", "action", action, "host", hostOf(url),
			"status", o.HTTPStatus, "code", o.Code, "detail", o.Detail)
	}
	return err
}

func (c *Client) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// hostOf is the host of a Bridge URL, for logs: the rest of the URL may
// carry a token.
func hostOf(raw string) string {
	if u, err := neturl.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// noRedirect stops a client at the first redirect: the signed body and its
// headers must reach only the registered URL, and a 3xx is a refusal.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// reply is what came back from one call.
type reply struct {
	status int    // 0: no answer
	body   []byte // at most MaxAnswerBytes
	err    error  // why there is no whole answer
	// tooLarge: the answer went on past MaxAnswerBytes (body is nil).
	tooLarge bool
}

// post sends one signed call. Its error is for the caller's problems (bad
// url, ctx ended); the Bridge's are in the reply.
func (c *Client) post(ctx context.Context, url, secret string, body []byte) (reply, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultClientTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		// Not wrapped: the parse error quotes the whole URL.
		return reply{}, fmt.Errorf("bridge: invalid request url: %s", egress.LogText(err))
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ts, sig := c.sent.stamp(secret, now().Unix(), body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(wire.HeaderSignature, sig)

	hc := http.Client{}
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = noRedirect
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		return reply{err: err}, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return reply{}, ctx.Err()
		}
		return reply{status: resp.StatusCode, err: fmt.Errorf("reading the answer: %w", err)}, nil
	}
	if len(data) > MaxAnswerBytes {
		return reply{status: resp.StatusCode, tooLarge: true}, nil
	}
	return reply{status: resp.StatusCode, body: data}, nil
}

// sent remembers what a Client signed in the current second, so that it
// never sends two byte-identical signed requests (which a Bridge would
// refuse as a replay): a repeat is signed with the next second instead.
type sent struct {
	mu     sync.Mutex
	at     map[string]int64 // signature → its timestamp, none before pruned
	pruned int64
}

// stamp returns the timestamp and signature for body: now, or the first
// later second whose signature this Client has not sent yet.
func (s *sent) stamp(secret string, now int64, body []byte) (int64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at == nil {
		s.at = map[string]int64{}
	}
	if s.pruned < now {
		// Timestamps before now are never signed again: they cannot collide.
		for sig, ts := range s.at {
			if ts < now {
				delete(s.at, sig)
			}
		}
		s.pruned = now
	}
	for ts := now; ; ts++ {
		sig := wire.Sign(secret, ts, body)
		if _, dup := s.at[sig]; !dup {
			s.at[sig] = ts
			return ts, sig
		}
	}
}
