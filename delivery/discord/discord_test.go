package discord

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	hookPath = "/api/webhooks/1180000000000000001/"
	token    = "mZ4h0yQ-wB9Vtoken_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
)

var message = provider.Message{
	Tenant: "t1", WorkflowID: "w", RunID: "run_1", StepID: "chat", SubscriberID: "u1",
	IdempotencyKey: "run_1:chat", To: "general",
	Content: json.RawMessage(`{"body":"Deploy **done**"}`),
}

func config(base string) map[string]any {
	return map[string]any{"webhookUrl": base + hookPath + token}
}

func errorAnswer(name string, status, code int, msg string) providertest.Answer {
	b, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	return providertest.Answer{Name: name, Status: status, Body: string(b)}
}

func TestSuite(t *testing.T) {
	providertest.Run(t, harness())
}

func BenchmarkSend(b *testing.B) {
	providertest.Benchmark(b, harness())
}

func harness() providertest.Harness {
	return providertest.Harness{
		New:      New,
		Config:   config,
		Secrets:  []string{token},
		Required: []string{"webhookUrl"},
		Message:  message,
		IsSend:   func(r *http.Request) bool { return r.URL.Path == hookPath+token && r.URL.Query().Get("wait") == "true" },
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"1180000000000000777","type":0,"content":"Deploy **done**","channel_id":"1180000000000000002","webhook_id":"1180000000000000001"}`)
			return "1180000000000000777"
		},
		NotSent: []providertest.Answer{
			errorAnswer("401", 401, 50027, "Invalid Webhook Token"),
			errorAnswer("404 unknown webhook", 404, 10015, "Unknown Webhook"),
			{Name: "429", Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: `{"message":"You are being rate limited.","retry_after":0.5,"global":false}`},
			{Name: "500", Status: 500, Body: `{"message":"500: Internal Server Error","code":0}`},
			{Name: "502", Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>Bad Gateway</html>"},
		},
		Rejected: []providertest.Answer{
			errorAnswer("50006 empty", 400, 50006, "Cannot send an empty message"),
			{Name: "50035 too long", Status: 400, Body: `{"code":50035,"errors":{"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 2000 or fewer in length."}]}},"message":"Invalid Form Body"}`},
			{Name: "413", Status: 413, Body: `{"message":"Request entity too large","code":40005}`},
		},
	}
}

func TestExactRequest(t *testing.T) {
	handler, got := providertest.Record(func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"id":"42"}`) })
	base, deps := providertest.Loopback(t, handler)
	cfg := config(base)
	cfg["webhookUrl"] = cfg["webhookUrl"].(string) + "?thread_id=99"
	p, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	m := message
	m.Content = json.RawMessage(`{"body":"Deploy","blocks":[{"title":"v1.2","color":5814783}]}`)
	if id, err := p.Send(context.Background(), m); err != nil || id != "42" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	r := <-got
	if r.Method != http.MethodPost || r.URI != hookPath+token+"?thread_id=99&wait=true" {
		t.Fatalf("request %s %s", r.Method, r.URI)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if want := `{"content":"Deploy","embeds":[{"title":"v1.2","color":5814783}]}`; string(r.Body) != want {
		t.Fatalf("body %s, want %s", r.Body, want)
	}
}

// TestNoContent: a 204 (a webhook that does not wait) is posted, with no id.
func TestNoContent(t *testing.T) {
	base, deps := providertest.Loopback(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	p, err := New(config(base), deps)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := p.Send(context.Background(), message); err != nil || id != "" {
		t.Fatalf("Send = %q, %v", id, err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	deps := provider.Deps{HTTPClient: http.DefaultClient, Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	for name, cfg := range map[string]map[string]any{
		"not a URL":        {"webhookUrl": "discord.com/api/webhooks/1/x"},
		"base with a path": {"webhookUrl": "https://discord.com/api/webhooks/1/x", "apiBaseUrl": "https://discord.com/api"},
		"absent":           {},
	} {
		_, err := New(cfg, deps)
		if err == nil {
			t.Errorf("%s: New succeeded", name)
			continue
		}
		if strings.Contains(err.Error(), "discord.com") {
			t.Errorf("%s: the error quotes the URL: %v", name, err)
		}
	}
}
