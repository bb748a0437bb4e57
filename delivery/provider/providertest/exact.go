package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
)

// Message is a send step's message as the provider packages' own tests
// send it: tenant t1, run run_1, subscriber u1, the step named step (its
// idempotency key run_1:step), to the address to, with content.
func Message(step, to, content string) provider.Message {
	return provider.Message{
		Tenant: "t1", WorkflowID: "w", RunID: "run_1", StepID: step, SubscriberID: "u1",
		IdempotencyKey: "run_1:" + step, To: to,
		Content: json.RawMessage(content),
	}
}

// EmailMessage is the email the email providers' tests send: a subject,
// both bodies, a Reply-To with a name, and a one-click unsubscribe URL.
func EmailMessage() provider.Message {
	m := Message("mail", "ada@example.com",
		`{"subject":"Welcome","html":"<p>Hi</p>","text":"Hi","replyTo":"Support <help@example.com>"}`)
	m.ListUnsubscribe = "https://herald.example.com/u/tok"
	return m
}

// JSONAnswer is the answer of status whose body is body as JSON: how a
// provider's tests write its documented error answer from the fields it
// names.
func JSONAnswer(name string, status int, body any) Answer {
	b, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("providertest: answer %s: %v", name, err))
	}
	return Answer{Name: name, Status: status, Body: string(b)}
}

// BadAddress marks a, an answer that says the recipient's address does
// not exist (see [Answer.BadAddress]).
func BadAddress(a Answer) Answer {
	a.BadAddress = true
	return a
}

// Recorder is a loopback server that records every request it receives
// and answers each the same way: where a provider's tests of the exact
// requests it sends start.
type Recorder struct {
	// Base is the server's URL.
	Base string
	// Deps reach the server, as [Loopback]'s do.
	Deps provider.Deps

	t   testing.TB
	got <-chan Request
}

// NewRecorder starts a Recorder for the rest of the test, which answers
// every request with answer.
func NewRecorder(t testing.TB, answer func(w http.ResponseWriter)) *Recorder {
	t.Helper()
	handler, got := Record(answer)
	base, deps := Loopback(t, handler)
	return &Recorder{Base: base, Deps: deps, t: t, got: got}
}

// Provider builds a provider with newP from config and r.Deps; it fails
// the test when New fails.
func (r *Recorder) Provider(newP provider.New, config map[string]any) provider.Provider {
	r.t.Helper()
	p, err := newP(config, r.Deps)
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	return p
}

// Send sends m with p and returns the id Send returned and the request
// the server received; it fails the test when Send fails.
func (r *Recorder) Send(p provider.Provider, m provider.Message) (string, Request) {
	r.t.Helper()
	id, err := p.Send(context.Background(), m)
	if err != nil {
		r.t.Fatalf("Send: %v", err)
	}
	select {
	case req := <-r.got:
		return id, req
	case <-time.After(10 * time.Second): // guards against a hang only
		r.t.Fatal("Send succeeded and no request reached the server")
		return "", Request{}
	}
}

// Exchange sends m with p, and fails the test unless Send returns wantID
// and the server received the request want describes. It returns that
// request for the checks a provider adds.
func (r *Recorder) Exchange(p provider.Provider, m provider.Message, wantID string, want Want) Request {
	r.t.Helper()
	id, req := r.Send(p, m)
	if id != wantID {
		r.t.Fatalf("Send returned id %q, want %q", id, wantID)
	}
	req.Check(r.t, want)
	return req
}

// Want is what a recorded request must be. A field left empty is not
// checked, except Method, which is then POST.
type Want struct {
	Method string
	// URI is the request's path and query.
	URI string
	// Header holds each header's exact value; "" says it must be absent.
	Header map[string]string
	// Body is the body, to the byte.
	Body string
}

// Check fails t unless req is as w says.
func (req Request) Check(t testing.TB, w Want) {
	t.Helper()
	method := w.Method
	if method == "" {
		method = http.MethodPost
	}
	if req.Method != method || (w.URI != "" && req.URI != w.URI) {
		t.Fatalf("request %s %s, want %s %s", req.Method, req.URI, method, w.URI)
	}
	for k, v := range w.Header {
		if got := req.Header.Get(k); got != v {
			t.Fatalf("header %s = %q, want %q (headers %v)", k, got, v, req.Header)
		}
	}
	if w.Body != "" && string(req.Body) != w.Body {
		t.Fatalf("body\n got %s\nwant %s", req.Body, w.Body)
	}
}

// Deps are the deps of a provider a test builds and never sends with:
// the default client, a logger that discards, the wall clock.
func Deps() provider.Deps {
	return provider.Deps{HTTPClient: http.DefaultClient, Logger: slog.New(slog.DiscardHandler), Now: time.Now}
}

// BadConfigs fails t unless newP refuses each of cases: base with the
// case's fields set over it (a nil value removes the field). No error
// may hold any of hidden (a secret, the URL a field carries).
func BadConfigs(t testing.TB, newP provider.New, base map[string]any, cases map[string]map[string]any, hidden ...string) {
	t.Helper()
	deps := Deps()
	for name, patch := range cases {
		config := maps.Clone(base)
		if config == nil {
			config = map[string]any{}
		}
		for k, v := range patch {
			if v == nil {
				delete(config, k)
				continue
			}
			config[k] = v
		}
		_, err := newP(config, deps)
		if err == nil {
			t.Errorf("%s: New succeeded", name)
			continue
		}
		for _, h := range hidden {
			if h != "" && strings.Contains(err.Error(), h) {
				t.Errorf("%s: the error %q holds %q", name, err, h)
			}
		}
	}
}
