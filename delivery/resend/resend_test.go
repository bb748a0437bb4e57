package resend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const apiKey = "re_123456789_AbCdEfGhIjKlMnOpQrStUvWx"

var message = provider.Message{
	Tenant: "t1", WorkflowID: "w", RunID: "run_1", StepID: "mail", SubscriberID: "u1",
	IdempotencyKey: "run_1:mail", To: "ada@example.com",
	Content:         json.RawMessage(`{"subject":"Welcome","html":"<p>Hi</p>","text":"Hi","replyTo":"help@example.com"}`),
	ListUnsubscribe: "https://herald.example/u/tok",
}

func config(base string) map[string]any {
	return map[string]any{"apiKey": apiKey, "fromEmail": "noreply@example.com", "fromName": "Herald", "apiBaseUrl": base}
}

// errAnswer is Resend's documented error answer.
func errAnswer(status int, name string) providertest.Answer {
	return providertest.JSONAnswer(name, status,
		map[string]any{"statusCode": status, "name": name, "message": "something about ada@example.com"})
}

func TestSuite(t *testing.T) { providertest.Run(t, harness(t)) }

func BenchmarkSend(b *testing.B) { providertest.Benchmark(b, harness(b)) }

func harness(testing.TB) providertest.Harness {
	return providertest.Harness{
		New:      New,
		Config:   config,
		Secrets:  []string{apiKey},
		Required: []string{"apiKey", "fromEmail"},
		Message:  message,
		IsSend:   func(r *http.Request) bool { return r.URL.Path == "/emails" },
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			_, _ = io.WriteString(w, `{"id":"49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}`)
			return "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"
		},
		NotSent: []providertest.Answer{
			errAnswer(401, "missing_api_key"),
			errAnswer(403, "invalid_api_key"),
			errAnswer(404, "not_found"),
			errAnswer(422, "invalid_from_address"),
			errAnswer(429, "rate_limit_exceeded"),
			errAnswer(429, "daily_quota_exceeded"),
			errAnswer(500, "application_error"),
			{Name: "502 html", Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>bad gateway</html>"},
		},
		Rejected: []providertest.Answer{
			errAnswer(422, "validation_error"),
			errAnswer(422, "missing_required_field"),
			errAnswer(400, "invalid_idempotency_key"),
			errAnswer(409, "invalid_idempotent_request"),
		},
	}
}

// TestExactRequest: the documented path, auth, Idempotency-Key and body.
func TestExactRequest(t *testing.T) {
	handler, got := providertest.Record(func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"id":"em_1"}`)
	})
	base, deps := providertest.Loopback(t, handler)
	p, err := New(config(base), deps)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Send(context.Background(), message)
	if err != nil || id != "em_1" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	r := <-got
	if r.Method != http.MethodPost || r.URI != "/emails" {
		t.Fatalf("request %s %s", r.Method, r.URI)
	}
	if r.Header.Get("Authorization") != "Bearer "+apiKey || r.Header.Get("Content-Type") != "application/json" ||
		r.Header.Get("Idempotency-Key") != "run_1:mail" {
		t.Fatalf("headers %v", r.Header)
	}
	const want = `{"from":"\"Herald\" \u003cnoreply@example.com\u003e","to":["ada@example.com"],"subject":"Welcome","html":"\u003cp\u003eHi\u003c/p\u003e","text":"Hi","reply_to":"help@example.com","headers":{"List-Unsubscribe":"\u003chttps://herald.example/u/tok\u003e","List-Unsubscribe-Post":"List-Unsubscribe=One-Click"}}`
	if string(r.Body) != want {
		t.Fatalf("body %s\nwant %s", r.Body, want)
	}
	if strings.Contains(string(r.Body), apiKey) {
		t.Fatal("the key is in the body")
	}
}

// TestBodyAloneAndLongKeys: a body alone is text or HTML by its first
// character; a key longer than Resend admits is sent as its digest,
// the same on every try.
func TestBodyAloneAndLongKeys(t *testing.T) {
	for body, field := range map[string]string{"Hello": `"text":"Hello"`, " <b>Hi</b>": `"html":" \u003cb\u003eHi\u003c/b\u003e"`} {
		handler, got := providertest.Record(func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"id":"em_2"}`) })
		base, deps := providertest.Loopback(t, handler)
		p, _ := New(config(base), deps)
		m := message
		m.IdempotencyKey = strings.Repeat("k", 300)
		m.Content, _ = json.Marshal(map[string]string{"subject": "S", "body": body})
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if !strings.Contains(string(r.Body), field) {
			t.Fatalf("body %q: %s", body, r.Body)
		}
		if k := r.Header.Get("Idempotency-Key"); k != IdempotencyKey(m.IdempotencyKey) || len(k) != 64 {
			t.Fatalf("Idempotency-Key %q", k)
		}
	}
}

// TestConcurrentSameKeyIsOutcomeUnknown: Resend is still handling another
// request of the key; it may send, so the failure must not fail over.
func TestConcurrentSameKeyIsOutcomeUnknown(t *testing.T) {
	for _, body := range []string{`{"statusCode":409,"name":"concurrent_idempotent_requests","message":"x"}`} {
		base, deps := providertest.Loopback(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(409)
			_, _ = io.WriteString(w, body)
		})
		p, _ := New(config(base), deps)
		if _, err := p.Send(context.Background(), message); !errors.Is(err, provider.ErrOutcomeUnknown) {
			t.Fatalf("err %v", err)
		}
	}
	base, deps := providertest.Loopback(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `<html>`) })
	p, _ := New(config(base), deps)
	if _, err := p.Send(context.Background(), message); !errors.Is(err, provider.ErrOutcomeUnknown) {
		t.Fatalf("unreadable 200: %v", err)
	}
}
