package discord

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	hookPath = "/api/webhooks/1180000000000000001/"
	token    = "mZ4h0yQ-wB9Vtoken_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
)

var message = providertest.Message("chat", "general", `{"body":"Deploy **done**"}`)

func config(base string) map[string]any {
	return map[string]any{"webhookUrl": base + hookPath + token}
}

// errorAnswer is Discord's documented error answer.
func errorAnswer(name string, status, code int, msg string) providertest.Answer {
	return providertest.JSONAnswer(name, status, map[string]any{"code": code, "message": msg})
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
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"id":"42"}`) })
	cfg := config(rec.Base)
	cfg["webhookUrl"] = cfg["webhookUrl"].(string) + "?thread_id=99"
	m := message
	m.Content = json.RawMessage(`{"body":"Deploy","blocks":[{"title":"v1.2","color":5814783}]}`)
	rec.Exchange(rec.Provider(New, cfg), m, "42", providertest.Want{
		URI:    hookPath + token + "?thread_id=99&wait=true",
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"content":"Deploy","embeds":[{"title":"v1.2","color":5814783}]}`,
	})
}

// TestNoContent: a 204 (a webhook that does not wait) is posted, with no id.
func TestNoContent(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) })
	rec.Exchange(rec.Provider(New, config(rec.Base)), message, "", providertest.Want{})
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, nil, map[string]map[string]any{
		"not a URL":        {"webhookUrl": "discord.com/api/webhooks/1/x"},
		"base with a path": {"webhookUrl": "https://discord.com/api/webhooks/1/x", "apiBaseUrl": "https://discord.com/api"},
		"absent":           {},
	}, "discord.com")
}
