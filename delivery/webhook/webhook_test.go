package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
	"github.com/heraldhq/herald/webhooksig"
)

// The secret is the standard's published test secret.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var message = provider.Message{
	Tenant: "t1", WorkflowID: "welcome", RunID: "run_1", StepID: "hook", SubscriberID: "u1",
	IdempotencyKey: "run_1:hook",
	Content:        json.RawMessage(`{"data":{"order":42,"items":["a"]}}`),
}

func answer(name string, status int) providertest.Answer {
	return providertest.Answer{Name: name, Status: status, Body: `{"error":"` + name + `"}`}
}

func TestSuite(t *testing.T) {
	providertest.Run(t, harness(t))
}

func BenchmarkSend(b *testing.B) {
	providertest.Benchmark(b, harness(b))
}

// harness describes the provider's API to the shared suite.
func harness(t testing.TB) providertest.Harness {
	return providertest.Harness{
		New: New,
		Config: func(base string) map[string]any {
			return map[string]any{"url": base + "/hooks/herald", "secret": secret}
		},
		Secrets:  []string{secret, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		Required: []string{"url"},
		Message:  message,
		IsSend:   func(r *http.Request) bool { return r.URL.Path == "/hooks/herald" },
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.WriteHeader(http.StatusNoContent)
			return r.Header.Get(webhooksig.HeaderID)
		},
		NotSent: []providertest.Answer{
			answer("401", 401), answer("403", 403), answer("404", 404), answer("429", 429),
			answer("500", 500), answer("503", 503),
			{Name: "redirect", Status: 302, Header: map[string]string{"Location": "http://127.0.0.1:1/"}},
		},
		Rejected: []providertest.Answer{answer("400", 400), answer("410", 410), answer("413", 413), answer("422", 422)},
	}
}

func TestExactRequest(t *testing.T) {
	handler, got := providertest.Record(func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	base, deps := providertest.Loopback(t, handler)
	now := time.Unix(1614265330, 0)
	deps.Now = func() time.Time { return now }
	p, err := New(map[string]any{"url": base + "/in?src=herald", "secret": secret}, deps)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Send(context.Background(), message)
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	const wantBody = `{"type":"message","tenantId":"t1","workflowId":"welcome","runId":"run_1","stepId":"hook","subscriberId":"u1","data":{"order":42,"items":["a"]}}`
	if r.Method != http.MethodPost || r.URI != "/in?src=herald" || string(r.Body) != wantBody {
		t.Fatalf("request %s %s %s", r.Method, r.URI, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	wantID := r.Header.Get("webhook-id")
	if id != wantID || len(wantID) != len("msg_")+32 || wantID[:4] != "msg_" {
		t.Fatalf("id %q, webhook-id %q", id, wantID)
	}
	if ts := r.Header.Get("webhook-timestamp"); ts != "1614265330" {
		t.Fatalf("webhook-timestamp %q", ts)
	}
	// Verified as a receiver would: recompute from the published secret.
	s, _ := webhooksig.ParseSecret(secret)
	if sig := r.Header.Get("webhook-signature"); sig != s.Sign(wantID, now, []byte(wantBody)) {
		t.Fatalf("webhook-signature %q does not verify", sig)
	}

	// A retry of the same send step carries the same webhook-id.
	now = now.Add(time.Minute)
	if id2, err := p.Send(context.Background(), message); err != nil || id2 != id {
		t.Fatalf("retry: id %q err %v, want the same id %q", id2, err, id)
	}
	if r2 := <-got; r2.Header.Get("webhook-id") != wantID || r2.Header.Get("webhook-timestamp") != "1614265390" {
		t.Fatalf("retry headers %v", r2.Header)
	}
}

func TestUnsignedWithoutSecret(t *testing.T) {
	handler, got := providertest.Record(func(http.ResponseWriter) {})
	base, deps := providertest.Loopback(t, handler)
	p, err := New(map[string]any{"url": base}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(context.Background(), message); err != nil {
		t.Fatal(err)
	}
	h := (<-got).Header
	if h.Get("webhook-signature") != "" || h.Get("webhook-id") == "" || h.Get("webhook-timestamp") == "" {
		t.Fatalf("headers without a secret: %v", h)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	deps := provider.Deps{HTTPClient: http.DefaultClient, Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	for name, config := range map[string]map[string]any{
		"relative url": {"url": "/hooks"},
		"ftp url":      {"url": "ftp://example.com/x"},
		"url type":     {"url": 42},
		"bad secret":   {"url": "https://example.com/x", "secret": "whsec_!!not-base64-secret"},
	} {
		if _, err := New(config, deps); err == nil {
			t.Errorf("%s: New succeeded", name)
		} else if s, _ := config["secret"].(string); s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("%s: the error holds the secret", name)
		}
	}
}
