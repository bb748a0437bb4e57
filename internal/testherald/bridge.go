package testherald

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testapi"
)

// TestBridge is a tenant Bridge served on loopback for tests.
type TestBridge struct {
	URL string

	t       testing.TB
	api     *testapi.Client
	mu      sync.RWMutex
	reg     *bridge.Registry
	secret  string
	handler http.Handler
}

// Bridge serves reg as the tenant's Bridge on a loopback httptest server
// and registers it with PUT /v1/bridge (using key).
func (h *Herald) Bridge(key string, reg *bridge.Registry) *TestBridge {
	h.t.Helper()
	return ServeBridge(h.t, h.API(key), reg)
}

// ServeBridge serves reg as a tenant's Bridge on a loopback httptest
// server and registers it with PUT /v1/bridge through api (the tenant's
// key, on any herald process: one in this test's process or a child).
func ServeBridge(t testing.TB, api *testapi.Client, reg *bridge.Registry) *TestBridge {
	t.Helper()
	b := &TestBridge{t: t, api: api, reg: reg, handler: http.NotFoundHandler()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.RLock()
		hd := b.handler
		b.mu.RUnlock()
		hd.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b.URL = srv.URL
	b.Rotate()
	return b
}

// Rotate registers the Bridge again (a new signing secret) and from then
// on accepts only the new secret.
func (b *TestBridge) Rotate() {
	b.t.Helper()
	bind, err := b.api.BindBridge(context.Background(), b.URL)
	if err != nil {
		b.t.Fatal(err)
	}
	b.mu.Lock()
	b.secret = bind.SigningSecret
	b.handler = bridge.Serve(b.reg, bridge.Options{SigningKey: b.secret})
	b.mu.Unlock()
}

// Serve serves reg from then on, with the same signing secret: the
// tenant's code deployed again (a workflow or schedule changed).
func (b *TestBridge) Serve(reg *bridge.Registry) {
	b.mu.Lock()
	b.reg = reg
	b.handler = bridge.Serve(reg, bridge.Options{SigningKey: b.secret})
	b.mu.Unlock()
}

// StandInDelivery is a stand-in for POST /v1/deliver: it records each
// request and answers a SendResult made from its idempotency key.
type StandInDelivery struct {
	URL string

	mu       sync.Mutex
	requests []map[string]any
	received []time.Time
	// Answer, when set, decides the status and body of each request.
	Answer func(req map[string]any) (status int, body any)
}

// NewStandInDelivery starts the stand-in on loopback.
func NewStandInDelivery(t testing.TB) *StandInDelivery {
	d := &StandInDelivery{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/deliver" || r.Header.Get("x-herald-internal-token") == "" || r.Header.Get("x-herald-tenant-id") == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.mu.Lock()
		d.requests = append(d.requests, req)
		d.received = append(d.received, time.Now())
		key, _ := req["idempotencyKey"].(string)
		answer := d.Answer
		d.mu.Unlock()
		status, body := http.StatusOK, any(map[string]string{"attemptId": "att_" + key, "status": "sent", "providerMessageId": key + "@test"})
		if answer != nil {
			status, body = answer(req)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	d.URL = srv.URL
	return d
}

// Requests returns the requests received so far.
func (d *StandInDelivery) Requests() []map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]map[string]any(nil), d.requests...)
}

// ReceivedAt returns when each of Requests was received, in their order.
func (d *StandInDelivery) ReceivedAt() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.received...)
}

// Ping is the workflow "ping" of the cluster and failover tests: a `run`
// step "work" that calls work with the run's id (when work is not nil),
// then an email whose subject is the run's id, so that an SMTP sink tells
// which runs sent and how often.
func Ping(work func(runID string)) *bridge.Workflow {
	return bridge.MustWorkflow("ping", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Run(ctx, "work", func(context.Context) (bool, error) {
			if work != nil {
				work(ctx.RunID)
			}
			return true, nil
		}); err != nil {
			return err
		}
		_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: ctx.RunID, Body: "ping"}, nil
		})
		return err
	})
}
