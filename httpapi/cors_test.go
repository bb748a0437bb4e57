package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// TestInboxCORS: the inbox's subscriber routes (stream included) answer
// the origins of HERALD_INBOX_ORIGINS, preflight and errors included;
// other origins and the tenant routes get no CORS header.
func TestInboxCORS(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{Env: map[string]string{"HERALD_INBOX_ORIGINS": "https://app.example.com"}}, "ada")
	tok := f.token("ada")
	send := func(method, path, origin, token string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), method, f.h.URL()+path, nil)
		req.Header.Set("Origin", origin)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
	res := send("OPTIONS", "/v1/inbox/messages/msg_x/read", "https://app.example.com", "", preflight)
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		res.Header.Get("Access-Control-Allow-Methods") != "GET, POST" ||
		res.Header.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type, Last-Event-ID" {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	if res := send("OPTIONS", "/v1/inbox/counts", "https://evil.example", "", preflight); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a preflight of another origin allowed: %v", res.Header)
	}
	for path, want := range map[string]int{"/v1/inbox/counts": 200, "/v1/inbox/messages": 200, "/inbox.js": 200} {
		res := send("GET", path, "https://app.example.com", tok, nil)
		if res.StatusCode != want || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
			t.Fatalf("GET %s: %d %v", path, res.StatusCode, res.Header)
		}
	}
	if res := send("GET", "/v1/inbox/counts", "https://app.example.com", "hit_bad", nil); res.StatusCode != 401 ||
		res.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("a 401 the page cannot read: %d %v", res.StatusCode, res.Header)
	}
	if res := send("GET", "/v1/inbox/counts", "https://evil.example", tok, nil); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin allowed: %v", res.Header)
	}
	if res := send("GET", "/v1/subscribers", "https://app.example.com", f.key, nil); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("a tenant route allowed cross-origin: %v", res.Header)
	}
	if res := send("OPTIONS", "/v1/subscribers", "https://app.example.com", "", preflight); res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("a preflight of a tenant route: %d", res.StatusCode)
	}

	// The stream, as an EventSource opens it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.h.URL()+"/v1/inbox/stream?token="+tok, nil)
	req.Header.Set("Origin", "https://app.example.com")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != 200 || stream.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("stream: %d %v", stream.StatusCode, stream.Header)
	}

	any := newInboxFixture(t, testherald.Options{Env: map[string]string{"HERALD_INBOX_ORIGINS": "*"}}, "bob")
	req, _ = http.NewRequestWithContext(context.Background(), "GET", any.h.URL()+"/v1/inbox/counts", nil)
	req.Header.Set("Origin", "https://anywhere.example")
	req.Header.Set("Authorization", "Bearer "+any.token("bob"))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("with *: %v", res.Header)
	}
}
