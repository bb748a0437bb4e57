package webhook

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
	"github.com/heraldhq/herald/standardwebhooks"
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
		// A receiver drops a second message of one webhook-id.
		SendKey: func(r *http.Request, _ []byte) string { return r.Header.Get(standardwebhooks.HeaderID) },
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.WriteHeader(http.StatusNoContent)
			return r.Header.Get(standardwebhooks.HeaderID)
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
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) })
	now := time.Unix(1614265330, 0)
	rec.Deps.Now = func() time.Time { return now }
	p := rec.Provider(New, map[string]any{"url": rec.Base + "/in?src=herald", "secret": secret})
	id, r := rec.Send(p, message)
	const wantBody = `{"type":"message","tenantId":"t1","workflowId":"welcome","runId":"run_1","stepId":"hook","subscriberId":"u1","data":{"order":42,"items":["a"]}}`
	r.Check(t, providertest.Want{
		URI: "/in?src=herald", Body: wantBody,
		Header: map[string]string{"Content-Type": "application/json", "webhook-timestamp": "1614265330"},
	})
	wantID := r.Header.Get("webhook-id")
	if id != wantID || len(wantID) != len("msg_")+32 || wantID[:4] != "msg_" {
		t.Fatalf("id %q, webhook-id %q", id, wantID)
	}
	// Verified as a receiver would: recompute from the published secret.
	s, _ := standardwebhooks.ParseSecret(secret)
	if sig := r.Header.Get("webhook-signature"); sig != s.Sign(wantID, now, []byte(wantBody)) {
		t.Fatalf("webhook-signature %q does not verify", sig)
	}

	// A retry of the same send step carries the same webhook-id.
	now = now.Add(time.Minute)
	rec.Exchange(p, message, id, providertest.Want{Header: map[string]string{"webhook-id": wantID, "webhook-timestamp": "1614265390"}})
}

func TestUnsignedWithoutSecret(t *testing.T) {
	rec := providertest.NewRecorder(t, func(http.ResponseWriter) {})
	_, r := rec.Send(rec.Provider(New, map[string]any{"url": rec.Base}), message)
	h := r.Header
	if h.Get("webhook-signature") != "" || h.Get("webhook-id") == "" || h.Get("webhook-timestamp") == "" {
		t.Fatalf("headers without a secret: %v", h)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, nil, map[string]map[string]any{
		"relative url": {"url": "/hooks"},
		"ftp url":      {"url": "ftp://example.com/x"},
		"url type":     {"url": 42},
		"bad secret":   {"url": "https://example.com/x", "secret": "whsec_!!not-base64-secret"},
	}, "whsec_!!not-base64-secret")
}
