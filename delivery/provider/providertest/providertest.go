// Package providertest is the suite every provider.Provider passes: a
// provider package describes its provider's API in a [Harness] (how to
// build it against a loopback server, what a success and each failure
// answer look like) and calls [Run] from its tests. A provider whose API
// is HTTP meets the suite's own loopback HTTP server; one that speaks
// another protocol (SMTP) brings its peer, a real server on loopback
// ([Harness.Serve]). The suite checks the contract of package provider,
// the same for every provider:
//
//   - a successful send returns the provider's message id, after exactly
//     one request;
//   - each answer meaning "not sent" or "retry later" (401, 429, 5xx, and
//     the provider's own) is ErrNotSent, and each "invalid recipient"
//     answer is ErrRejected, marked ErrBadAddress when it says the address
//     does not exist (and no other answer is), and each answer that
//     leaves the outcome unknown is ErrOutcomeUnknown;
//   - a refused connection, and a context done before the request left,
//     are ErrNotSent; a timeout or a cancellation after the request was
//     written is ErrOutcomeUnknown, with the context's error as a cause;
//   - every failure is exactly one of the three kinds;
//   - a config missing a required field is refused by New;
//   - no secret of the config appears in any error text or log line;
//   - concurrent sends are safe (run the suite with -race);
//   - where the API takes a value that tells a retry from another send
//     ([Harness.SendKey]), every try of one send carries the same one.
//
// [Benchmark] measures sends/s of the same harness against its loopback
// server.
package providertest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
)

// Answer is one answer of the provider's API, as its documentation
// states it: an HTTP answer, or for a peer of [Harness.Serve] a reply of
// its protocol (Step, Status and Body).
type Answer struct {
	// Name names the case in test output (e.g. "503", "channel_not_found").
	Name string
	// Status is the HTTP status, or the reply code of a Serve peer (an
	// SMTP 451).
	Status int
	// Header is added to the answer; Content-Type defaults to
	// application/json. Serve peers ignore it.
	Header map[string]string
	// Body is the HTTP answer's body, or the reply's text of a Serve
	// peer (for SMTP, led by its enhanced code: "5.1.1 no such user").
	Body string
	// Step is, for a Serve peer, the step of the exchange that answers,
	// in the protocol's words (SMTP: "MAIL", "RCPT", "DATA"); the steps
	// before it succeed. Empty for HTTP.
	Step string
	// BadAddress: the answer says the recipient's address does not exist;
	// the failure is marked provider.ErrBadAddress as well. Every other
	// answer must not be.
	BadAddress bool
}

func (a Answer) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// Harness describes one provider to the suite. New, Config, Secrets,
// Message and NotSent are required, and either IsSend and Accept (an HTTP
// API) or Serve (another protocol).
type Harness struct {
	// New is the provider package's constructor.
	New provider.New
	// Config returns a working config whose base URL (or token URL, or
	// server) is baseURL: the suite's loopback server, or the Base of the
	// Serve peer. The suite also passes "http://127.0.0.1:1" for a config
	// that is never sent with.
	Config func(baseURL string) map[string]any
	// Secrets are literal values of Config's secret fields (or their
	// secret parts) that must never appear in an error text or a log line.
	Secrets []string
	// Required are the config fields New must refuse to do without.
	Required []string
	// Message is a valid message of the provider's kind.
	Message provider.Message
	// IsSend reports whether r is the call that sends the message. Other
	// requests (an OAuth2 token request) go to Aux.
	IsSend func(r *http.Request) bool
	// Aux answers the requests that are not the send; nil answers 404.
	Aux http.Handler
	// Accept answers a send with the provider's success answer and
	// returns the message id the provider must return.
	Accept func(w http.ResponseWriter, r *http.Request) (id string)
	// Serve starts the peer of a provider that does not speak HTTP, a
	// real server of its protocol on loopback, which treats every send as
	// b says; t.Cleanup stops it. Nil: the provider speaks HTTP, and the
	// suite serves IsSend, Aux and Accept.
	Serve func(t testing.TB, b Behaviour) *Peer
	// NotSent are answers that prove the message was not sent (at least a
	// 401, a 429 and a 5xx in the provider's format; for SMTP, a 4xx).
	NotSent []Answer
	// Rejected are answers refusing the recipient or the message for good.
	Rejected []Answer
	// Unknown are answers that leave the provider unable to tell whether
	// the message was taken (a 200 it cannot read, from an API whose 200
	// alone does not say; a request of the same idempotency key still in
	// progress): ErrOutcomeUnknown.
	Unknown []Answer
	// SendKey, when set, reads from a send request (its body read in
	// full) the value by which the provider's API, or the message's
	// receiver, can tell a second try of one send from another send: an
	// Idempotency-Key, a client reference, a webhook-id, a Message-ID.
	// The suite checks that two sends of one message carry one value,
	// and a message of another idempotency key another: a send taken
	// over after its process died carries the first try's value. A Serve
	// peer gives the value as Peer.LastSendKey instead. Nil (and no
	// Peer.LastSendKey): the API takes no such value.
	SendKey func(r *http.Request, body []byte) string
}

// Behaviour is what a Serve peer does with each send it receives. The
// zero value accepts every send.
type Behaviour struct {
	// Answer, when set, is the answer every send gets.
	Answer *Answer
	// HangAfterFirst: the first send is accepted; each later one is
	// received in full and gets no answer, until the client goes away.
	HangAfterFirst bool
	// Unreachable: no send must reach the peer; one that does fails the
	// test.
	Unreachable bool
}

// Peer is a running Serve peer.
type Peer struct {
	// Base is what Harness.Config is given to reach the peer.
	Base string
	// TLSConfig trusts the peer's certificate: the suite gives it to New
	// as provider.Deps.TLSConfig. Nil: the system's roots.
	TLSConfig *tls.Config
	// Sends is how many sends reached the peer (for SMTP, MAIL commands),
	// accepted or not.
	Sends func() int
	// LastID is the message id the provider must return for the last
	// send the peer accepted.
	LastID func() string
	// LastSendKey, when set, is the value by which the last send the
	// peer accepted tells a try of a send from another send (see
	// Harness.SendKey; for SMTP, its Message-ID). The suite sets it for
	// its HTTP peer from Harness.SendKey.
	LastSendKey func() string
	// Close stops the peer: later connections are refused.
	Close func()
}

// Run runs the suite against h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	s := &suite{h: h}
	t.Run("SendReturnsTheProvidersID", s.sendReturnsID)
	t.Run("NotSentAnswers", s.notSentAnswers)
	t.Run("RejectedAnswers", s.rejectedAnswers)
	t.Run("OutcomeUnknownAnswers", s.unknownAnswers)
	t.Run("ConnectionRefusedIsNotSent", s.connectionRefused)
	t.Run("TimeoutAfterWriteIsOutcomeUnknown", s.timeoutAfterWrite)
	t.Run("CancelledBeforeSendIsNotSent", s.cancelledBefore)
	t.Run("CancelWhileWaitingIsHonoured", s.cancelWhileWaiting)
	t.Run("RequiredConfig", s.requiredConfig)
	t.Run("ConcurrentSends", s.concurrentSends)
	t.Run("EveryTryCarriesTheSameSendKey", s.sameSendKey)
	t.Run("NoSecretInErrorsOrLogs", s.noSecrets)
}

type suite struct {
	h Harness

	mu    sync.Mutex
	texts []string // every error text and log line seen
}

func (s *suite) record(text string) {
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.mu.Unlock()
}

// fixture is a provider built against its peer: the suite's HTTP server
// or the harness's Serve peer.
type fixture struct {
	p     provider.Provider
	peer  *Peer
	sends func() int
}

// start starts the provider's peer, treating every send as b says, and
// builds the provider against it.
func (s *suite) start(t *testing.T, b Behaviour) *fixture {
	t.Helper()
	var peer *Peer
	var client *http.Client
	if s.h.Serve != nil {
		peer = s.h.Serve(t, b)
		client = http.DefaultClient
	} else {
		peer, client = s.serveHTTP(t, b)
	}
	logs := &logSink{}
	t.Cleanup(func() { s.record(logs.String()) })
	p, err := s.h.New(s.h.Config(peer.Base), provider.Deps{
		HTTPClient: client,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:        time.Now,
		Dial:       (&net.Dialer{}).DialContext,
		TLSConfig:  peer.TLSConfig,
	})
	if err != nil {
		t.Fatalf("New with a working config: %v", err)
	}
	if c, ok := p.(io.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return &fixture{p: p, peer: peer, sends: peer.Sends}
}

// logSink holds what a provider logs, written from its goroutines while
// the suite reads it. The suite keeps its own rather than borrow the
// service tests' support: providers sit below the service.
type logSink struct {
	mu  sync.Mutex
	out []byte
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.out = append(l.out, p...)
	l.mu.Unlock()
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.out)
}

// serveHTTP is the peer of a provider whose API is HTTP, and the client
// that reaches it.
func (s *suite) serveHTTP(t *testing.T, b Behaviour) (*Peer, *http.Client) {
	var sends atomic.Int32
	var lastID, lastKey atomic.Value
	lastID.Store("")
	lastKey.Store("")
	accept := func(w http.ResponseWriter, r *http.Request) {
		if s.h.SendKey != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Errorf("reading a send: %v", err)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			lastKey.Store(s.h.SendKey(r, body))
		}
		lastID.Store(s.h.Accept(w, r))
	}
	send := accept
	switch {
	case b.Answer != nil:
		send = func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			b.Answer.write(w)
		}
	case b.HangAfterFirst:
		send = func(w http.ResponseWriter, r *http.Request) {
			if sends.Load() == 1 {
				accept(w, r)
				return
			}
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}
	case b.Unreachable:
		send = func(http.ResponseWriter, *http.Request) { t.Error("a send reached the provider") }
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.h.IsSend(r) {
			if s.h.Aux == nil {
				http.NotFound(w, r)
				return
			}
			s.h.Aux.ServeHTTP(w, r)
			return
		}
		sends.Add(1)
		send(w, r)
	}))
	t.Cleanup(srv.Close)
	// Like delivery's client, the suite's follows no redirect.
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	peer := &Peer{
		Base:   srv.URL,
		Sends:  func() int { return int(sends.Load()) },
		LastID: func() string { return lastID.Load().(string) },
		Close:  srv.Close,
	}
	if s.h.SendKey != nil {
		peer.LastSendKey = func() string { return lastKey.Load().(string) }
	}
	return peer, client
}

// send sends the harness's message and records the error text.
func (s *suite) send(ctx context.Context, f *fixture) (string, error) {
	id, err := f.p.Send(ctx, s.h.Message)
	if err != nil {
		s.record(err.Error())
	}
	return id, err
}

// wantKind fails t unless err is an *provider.Error of exactly kind.
func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %v", kind)
	}
	var perr *provider.Error
	if !errors.As(err, &perr) {
		t.Fatalf("err %v is not a *provider.Error", err)
	}
	n := 0
	for _, k := range []error{provider.ErrNotSent, provider.ErrOutcomeUnknown, provider.ErrRejected} {
		if errors.Is(err, k) {
			n++
		}
	}
	if n != 1 || !errors.Is(err, kind) {
		t.Fatalf("err %v: want exactly kind %v", err, kind)
	}
}

func timeoutCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) sendReturnsID(t *testing.T) {
	f := s.start(t, Behaviour{})
	id, err := s.send(timeoutCtx(t, 10*time.Second), f)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if w := f.peer.LastID(); id != w {
		t.Fatalf("id = %q, want the provider's %q", id, w)
	}
	if n := f.sends(); n != 1 {
		t.Fatalf("%d send requests, want 1", n)
	}
}

func (s *suite) answers(t *testing.T, answers []Answer, kind error) {
	for _, a := range answers {
		t.Run(a.Name, func(t *testing.T) {
			f := s.start(t, Behaviour{Answer: &a})
			id, err := s.send(timeoutCtx(t, 10*time.Second), f)
			wantKind(t, err, kind)
			if got := errors.Is(err, provider.ErrBadAddress); got != a.BadAddress {
				t.Fatalf("err %v: marked provider.ErrBadAddress %v, want %v", err, got, a.BadAddress)
			}
			if id != "" {
				t.Fatalf("a failed send returned id %q", id)
			}
			if n := f.sends(); n != 1 {
				t.Fatalf("%d send requests, want 1 (the provider must not retry by itself)", n)
			}
		})
	}
}

func (s *suite) notSentAnswers(t *testing.T) {
	if len(s.h.NotSent) == 0 {
		t.Fatal("the harness lists no not-sent answer")
	}
	s.answers(t, s.h.NotSent, provider.ErrNotSent)
}

func (s *suite) rejectedAnswers(t *testing.T) {
	s.answers(t, s.h.Rejected, provider.ErrRejected)
}

func (s *suite) unknownAnswers(t *testing.T) {
	s.answers(t, s.h.Unknown, provider.ErrOutcomeUnknown)
}

func (s *suite) connectionRefused(t *testing.T) {
	f := s.start(t, Behaviour{Unreachable: true})
	f.peer.Close()
	_, err := s.send(timeoutCtx(t, 10*time.Second), f)
	wantKind(t, err, provider.ErrNotSent)
}

// warmUp sends once successfully (a provider that fetches a token first
// has it cached, so a short deadline bounds the send alone).
func (s *suite) warmUp(t *testing.T, f *fixture) {
	t.Helper()
	if _, err := s.send(timeoutCtx(t, 10*time.Second), f); err != nil {
		t.Fatalf("warm-up Send: %v", err)
	}
}

func (s *suite) timeoutAfterWrite(t *testing.T) {
	f := s.start(t, Behaviour{HangAfterFirst: true})
	s.warmUp(t, f)
	start := time.Now()
	_, err := s.send(timeoutCtx(t, 300*time.Millisecond), f)
	wantKind(t, err, provider.ErrOutcomeUnknown)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v does not wrap context.DeadlineExceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("Send outlived its deadline by %v", time.Since(start))
	}
	if n := f.sends(); n != 2 {
		t.Fatalf("%d send requests, want 2 (the warm-up and one)", n)
	}
}

func (s *suite) cancelledBefore(t *testing.T) {
	f := s.start(t, Behaviour{Unreachable: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.send(ctx, f)
	wantKind(t, err, provider.ErrNotSent)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v does not wrap context.Canceled", err)
	}
}

func (s *suite) cancelWhileWaiting(t *testing.T) {
	f := s.start(t, Behaviour{HangAfterFirst: true})
	s.warmUp(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for f.sends() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := s.send(ctx, f)
		done <- err
	}()
	select {
	case err := <-done:
		wantKind(t, err, provider.ErrOutcomeUnknown)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v does not wrap context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send did not return after its context was cancelled")
	}
}

func (s *suite) requiredConfig(t *testing.T) {
	for _, field := range s.h.Required {
		t.Run(field, func(t *testing.T) {
			config := s.h.Config("http://127.0.0.1:1")
			delete(config, field)
			_, err := s.h.New(config, Deps())
			if err == nil {
				t.Fatalf("New without %s succeeded", field)
			}
			s.record(err.Error())
			if !strings.Contains(err.Error(), field) {
				t.Fatalf("New's error %q does not name %s", err, field)
			}
		})
	}
}

func (s *suite) concurrentSends(t *testing.T) {
	f := s.start(t, Behaviour{})
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.send(timeoutCtx(t, 10*time.Second), f)
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Send: %v", err)
		}
	}
}

// sameSendKey sends the harness's message twice, as a takeover of a send
// whose process died does, then the message under another idempotency
// key: the two tries carry one send key, the other send another.
func (s *suite) sameSendKey(t *testing.T) {
	f := s.start(t, Behaviour{})
	if f.peer.LastSendKey == nil {
		t.Skip("the provider's API takes no value that tells a retry from another send")
	}
	other := s.h.Message
	other.IdempotencyKey += "-other"
	var keys []string
	for _, m := range []provider.Message{s.h.Message, s.h.Message, other} {
		if _, err := f.p.Send(timeoutCtx(t, 10*time.Second), m); err != nil {
			t.Fatalf("Send: %v", err)
		}
		keys = append(keys, f.peer.LastSendKey())
	}
	if keys[0] == "" || keys[1] != keys[0] {
		t.Fatalf("two tries of one send carried %q and %q: a receiver cannot drop the second", keys[0], keys[1])
	}
	if keys[2] == keys[0] {
		t.Fatalf("a send of another idempotency key carried the first one's %q: it would be dropped", keys[0])
	}
}

// noSecrets runs last: it reads every error text and log line the other
// cases recorded.
func (s *suite) noSecrets(t *testing.T) {
	if len(s.h.Secrets) == 0 {
		t.Fatal("the harness lists no secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.texts) == 0 {
		t.Fatal("no error text was recorded")
	}
	for _, text := range s.texts {
		for _, secret := range s.h.Secrets {
			if secret != "" && strings.Contains(text, secret) {
				t.Fatalf("a secret appears in %q", text)
			}
		}
	}
}
