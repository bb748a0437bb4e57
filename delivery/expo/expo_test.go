package expo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const accessToken = "expo-access-9f8e7d6c5b4a39281706f5e4d3c2b1a0"

var message = provider.Message{
	Tenant: "t1", WorkflowID: "w", RunID: "run_1", StepID: "push", SubscriberID: "u1",
	IdempotencyKey: "run_1:push", To: "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]",
	Content: json.RawMessage(`{"title":"Hello","body":"World","data":{"orderId":"42"}}`),
}

func config(base string) map[string]any {
	return map[string]any{"accessToken": accessToken, "apiBaseUrl": base}
}

func ticketError(name, code string, bad bool) providertest.Answer {
	return providertest.Answer{Name: name, Status: 200, BadAddress: bad, Body: fmt.Sprintf(
		`{"data":[{"status":"error","message":"\"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]\" failed","details":{"error":%q}}]}`, code)}
}

func requestError(name string, status int, code string) providertest.Answer {
	return providertest.Answer{Name: name, Status: status, Body: fmt.Sprintf(
		`{"errors":[{"code":%q,"message":"the request failed"}]}`, code)}
}

func TestSuite(t *testing.T) {
	providertest.Run(t, harness())
}

func BenchmarkSend(b *testing.B) {
	providertest.Benchmark(b, harness())
}

func harness() providertest.Harness {
	return providertest.Harness{
		New:     New,
		Config:  config,
		Secrets: []string{accessToken},
		Message: message,
		IsSend: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/--/api/v2/push/send" && r.Header.Get("Authorization") == "Bearer "+accessToken
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"data":[{"status":"ok","id":"XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX"}]}`)
			return "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX"
		},
		NotSent: []providertest.Answer{
			requestError("401", 401, "UNAUTHORIZED"),
			requestError("429", 429, "TOO_MANY_REQUESTS"),
			requestError("500", 500, "INTERNAL_SERVER_ERROR"),
			{Name: "503", Status: 503, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>unavailable</html>"},
			ticketError("MessageRateExceeded", "MessageRateExceeded", false),
			ticketError("InvalidCredentials", "InvalidCredentials", false),
			ticketError("MismatchSenderId", "MismatchSenderId", false),
		},
		Rejected: []providertest.Answer{
			ticketError("DeviceNotRegistered", "DeviceNotRegistered", true),
			ticketError("MessageTooBig", "MessageTooBig", false),
			requestError("400 validation", 400, "VALIDATION_ERROR"),
		},
	}
}

func TestExactRequest(t *testing.T) {
	handler, got := providertest.Record(func(w http.ResponseWriter) {
		// A single ticket, not a list, is answered as well.
		_, _ = io.WriteString(w, `{"data":{"status":"ok","id":"T1"}}`)
	})
	base, deps := providertest.Loopback(t, handler)
	p, err := New(config(base), deps)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := p.Send(context.Background(), message); err != nil || id != "T1" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	r := <-got
	if r.Method != http.MethodPost || r.URI != "/--/api/v2/push/send" {
		t.Fatalf("request %s %s", r.Method, r.URI)
	}
	if r.Header.Get("Authorization") != "Bearer "+accessToken || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", r.Header)
	}
	const want = `[{"to":"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]","title":"Hello","body":"World","data":{"orderId":"42"}}]`
	if string(r.Body) != want {
		t.Fatalf("body %s, want %s", r.Body, want)
	}

	// Without an access token, no Authorization header.
	p, _ = New(map[string]any{"apiBaseUrl": base}, deps)
	if _, err := p.Send(context.Background(), message); err != nil {
		t.Fatal(err)
	}
	if h := (<-got).Header; h.Get("Authorization") != "" {
		t.Fatalf("Authorization %q without a token", h.Get("Authorization"))
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	deps := provider.Deps{HTTPClient: http.DefaultClient, Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	for name, cfg := range map[string]map[string]any{
		"base url with a path": {"apiBaseUrl": "https://exp.host/--/api"},
		"token not a string":   {"accessToken": 1},
	} {
		if _, err := New(cfg, deps); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	p, err := New(map[string]any{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*Provider).endpoint; got != "https://exp.host/--/api/v2/push/send" {
		t.Fatalf("default endpoint %q", got)
	}
}
