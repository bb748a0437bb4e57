package teams

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

// hookPath is the path of a Workflows webhook URL; its sig is the token.
const (
	hookPath = "/workflows/7d1c/triggers/manual/paths/invoke"
	sig      = "sig-Qm9vZ2llV29vZ2llU2VjcmV0"
)

var message = providertest.Message("chat", "general", `{"body":"Deploy *done* <at>all</at>"}`)

func config(base string) map[string]any {
	return map[string]any{"webhookUrl": base + hookPath + "?api-version=2016-06-01&sig=" + sig}
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
		Secrets:  []string{sig},
		Required: []string{"webhookUrl"},
		Message:  message,
		IsSend:   func(r *http.Request) bool { return r.URL.Path == hookPath && r.URL.Query().Get("sig") == sig },
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.WriteHeader(http.StatusAccepted)
			return ""
		},
		NotSent: []providertest.Answer{
			{Name: "401", Status: 401, Body: `{"error":{"code":"DirectApiAuthorizationRequired","message":"The request must be authenticated"}}`},
			{Name: "404 webhook removed", Status: 404, Body: `{"error":{"code":"WorkflowNotFound","message":"The workflow could not be found."}}`},
			{Name: "429", Status: 429, Body: `{"error":{"code":"WorkflowTriggeredByMultipleRequests","message":"Rate limit is exceeded."}}`},
			{Name: "502", Status: 502, Body: "Bad Gateway"},
			{Name: "legacy 200 with an error", Status: 200, Header: map[string]string{"Content-Type": "text/plain"},
				Body: "Microsoft Teams endpoint returned HTTP error 429 with ContextId tcid=0,server=msgapi-canary"},
		},
		Rejected: []providertest.Answer{
			{Name: "400", Status: 400, Header: map[string]string{"Content-Type": "text/plain"}, Body: "Bad payload received by generic incoming webhook."},
			{Name: "413", Status: 413, Body: `{"error":{"code":"PayloadTooLarge"}}`},
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) { _, _ = io.WriteString(w, "1") })
	p := rec.Provider(New, config(rec.Base))
	rec.Exchange(p, message, "", providertest.Want{
		URI:    hookPath + "?api-version=2016-06-01&sig=" + sig,
		Header: map[string]string{"Content-Type": "application/json"},
		Body: `{"type":"message","attachments":[{"contentType":"application/vnd.microsoft.card.adaptive","contentUrl":null,` +
			`"content":{"$schema":"http://adaptivecards.io/schemas/adaptive-card.json","type":"AdaptiveCard","version":"1.4",` +
			`"body":[{"text":"Deploy *done* \u003cat\u003eall\u003c/at\u003e","type":"TextBlock","wrap":true}]}}]}`,
	})

	// Blocks are the card's elements, the body its fallback text.
	m := message
	m.Content = json.RawMessage(`{"body":"fallback","blocks":[{"type":"TextBlock","text":"Hi","size":"Large"}]}`)
	if _, r := rec.Send(p, m); !strings.Contains(string(r.Body), `"body":[{"type":"TextBlock","text":"Hi","size":"Large"}],"fallbackText":"fallback"`) {
		t.Fatalf("body with blocks: %s", r.Body)
	}
}

// TestAPIBaseURL: apiBaseUrl replaces the webhook's scheme and host and
// keeps its path and query.
func TestAPIBaseURL(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) })
	cfg := config("https://prod-12.westeurope.logic.azure.com:443")
	cfg["apiBaseUrl"] = rec.Base
	rec.Exchange(rec.Provider(New, cfg), message, "", providertest.Want{URI: hookPath + "?api-version=2016-06-01&sig=" + sig})
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, nil, map[string]map[string]any{
		"not a URL":          {"webhookUrl": "outlook.office.com/webhook/x"},
		"ftp":                {"webhookUrl": "ftp://outlook.office.com/webhook/x"},
		"user info":          {"webhookUrl": "https://a:b@outlook.office.com/webhook/x"},
		"base with a path":   {"webhookUrl": "https://outlook.office.com/webhook/x", "apiBaseUrl": "http://127.0.0.1:1/x"},
		"webhook not a text": {"webhookUrl": 7},
	}, "outlook")
}
