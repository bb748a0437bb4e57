// Package testherald runs a whole herald service in-process for end-to-end
// tests: embedded JetStream and projections in t.TempDir(), the API on a
// loopback port, shut down by t.Cleanup. Do and API speak its REST API
// through package testapi.
package testherald

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// Options tune Start. The zero value is a default service.
type Options struct {
	// DataDir reuses a data directory (to test restarts). Zero: a new
	// t.TempDir().
	DataDir string
	// Env adds HERALD_* variables.
	Env map[string]string
	// Logger receives the service's logs. Zero: discarded.
	Logger *slog.Logger
	// ProviderTLS is the TLS configuration of the service's SMTP
	// connections, e.g. RootCAs trusting a test server's certificate.
	// Zero: the system's roots.
	ProviderTLS *tls.Config
	// DeliverURL points the engine's deliveries at another API (a stand-in
	// /v1/deliver). Zero: the service's own.
	DeliverURL string
	// AckWait is how soon work a stopped process held is redelivered.
	// Zero: the service's default.
	AckWait time.Duration
	// InboxTokenTTL is the life of minted inbox tokens. Zero: 24h.
	InboxTokenTTL time.Duration
	// InboxHeartbeat is how often an idle inbox stream writes a comment
	// line. Zero: 15s.
	InboxHeartbeat time.Duration
	// SNSClient answers the service's requests for SNS signing
	// certificates and subscription confirmations. Zero: Amazon's.
	SNSClient *http.Client
	// Tune changes the service's configuration last, before it starts
	// (a test knob such as MaxRunSteps).
	Tune func(*service.Config)
}

// Herald is a running service and a client for it.
type Herald struct {
	*service.Service
	t      testing.TB
	Client *http.Client
}

// Start starts a service and waits until it is ready.
func Start(t testing.TB, opts Options) *Herald {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	env := func(k string) string { return opts.Env[k] }
	cfg, err := service.LoadConfig(env, service.Flags{HTTPAddr: "127.0.0.1:0", DataDir: opts.DataDir})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.RetryBase = 50 * time.Millisecond
	cfg.ProviderTLS = opts.ProviderTLS
	cfg.DeliverURL = opts.DeliverURL
	cfg.AckWait = opts.AckWait
	cfg.InboxTokenTTL = opts.InboxTokenTTL
	cfg.InboxHeartbeat = opts.InboxHeartbeat
	cfg.SNSClient = opts.SNSClient
	if v := opts.Env["HERALD_RETRY_BASE"]; v != "" {
		cfg.RetryBase, _ = time.ParseDuration(v)
	}
	if opts.Tune != nil {
		opts.Tune(&cfg)
	}
	svc, err := service.Start(context.Background(), cfg, opts.Logger)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	h := &Herald{Service: svc, t: t, Client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(func() { h.Stop() })
	deadline := time.Now().Add(15 * time.Second)
	for !svc.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("service not ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return h
}

// Stop shuts the service down (idempotent).
func (h *Herald) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.Shutdown(ctx)
}

// Response is an answer as it came.
type Response = testapi.Response

// API returns a client of the service's API that authenticates with token
// ("" for none) and sends with h.Client.
func (h *Herald) API(token string) *testapi.Client {
	c := testapi.New(h.URL(), token)
	c.HTTP = h.Client
	return c
}

// Do sends a request with the bearer token (none when empty) and fails the
// test when no answer comes. body may be nil, a string or []byte (sent as
// is) or a value (marshalled).
func (h *Herald) Do(method, path, token string, body any) Response {
	h.t.Helper()
	r, err := h.API(token).Send(context.Background(), method, path, body)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// Tenant creates a tenant through the admin API and returns its id and key.
func (h *Herald) Tenant(name string) (tenantID, apiKey string) {
	h.t.Helper()
	tn, err := h.API(h.AdminToken()).CreateTenant(context.Background(), name)
	if err != nil {
		h.t.Fatalf("create tenant: %v", err)
	}
	return tn.TenantID, tn.APIKey
}

// MailChannel configures the tenant of key with an email-smtp channel to
// the SMTP server on loopback port, from noreply@herald.test: the email
// channel a test sends through.
func (h *Herald) MailChannel(key string, port int) {
	h.t.Helper()
	if r := h.Do("POST", "/v1/channels", key, map[string]any{"channelKey": "email-smtp", "config": map[string]any{
		"host": "127.0.0.1", "port": port, "fromEmail": "noreply@herald.test"}}); r.Status != http.StatusCreated {
		h.t.Fatalf("channel: %d %s", r.Status, r.Body)
	}
}

// WaitRun polls GET /v1/runs/{runID} until the run's status is one of
// want and returns the run. Its bound is testwait.HangGuard, a guard
// against a hang: a loaded machine only makes it return later.
func (h *Herald) WaitRun(key, runID string, want ...string) map[string]any {
	h.t.Helper()
	return h.WaitRunWithin(key, runID, testwait.HangGuard, want...)
}

// WaitRunWithin is WaitRun bounded by within instead, for a test whose
// bound is part of what it asserts or that waits on the clock for longer
// than the guard.
func (h *Herald) WaitRunWithin(key, runID string, within time.Duration, want ...string) map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(within)
	var last Response
	var lastErr error
	for time.Now().Before(deadline) {
		// A poll the client gives up on (a loaded machine's projector
		// behind a run of large rows, the read waiting for it) is not
		// an answer: the next poll asks again, as a client does.
		r, err := h.API(key).Send(context.Background(), "GET", "/v1/runs/"+runID, nil)
		if lastErr = err; err == nil {
			last = r
		}
		if err == nil && r.Status == http.StatusOK {
			m := r.Map(h.t)
			for _, w := range want {
				if m["status"] == w {
					return m
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("run %s did not reach %v in %v: %d %s (last poll: %v)", runID, want, within, last.Status, last.Body, lastErr)
	return nil
}
