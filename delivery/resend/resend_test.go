package resend

import (
	"encoding/json"
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
		// Resend drops a second request of one Idempotency-Key.
		SendKey: func(r *http.Request, _ []byte) string { return r.Header.Get("Idempotency-Key") },
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
		Unknown: []providertest.Answer{
			// Resend is still handling another request of the key; it
			// may send, so the failure must not fail over.
			errAnswer(409, "concurrent_idempotent_requests"),
			{Name: "unreadable 200", Status: 200, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>"},
		},
	}
}

// TestExactRequest: the documented path, auth, Idempotency-Key and body.
func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"id":"em_1"}`)
	})
	r := rec.Exchange(rec.Provider(New, config(rec.Base)), message, "em_1", providertest.Want{
		URI: "/emails",
		Header: map[string]string{"Authorization": "Bearer " + apiKey, "Content-Type": "application/json",
			"Idempotency-Key": "run_1:mail"},
		Body: `{"from":"\"Herald\" \u003cnoreply@example.com\u003e","to":["ada@example.com"],"subject":"Welcome","html":"\u003cp\u003eHi\u003c/p\u003e","text":"Hi","reply_to":"help@example.com","headers":{"List-Unsubscribe":"\u003chttps://herald.example/u/tok\u003e","List-Unsubscribe-Post":"List-Unsubscribe=One-Click"}}`,
	})
	if strings.Contains(string(r.Body), apiKey) {
		t.Fatal("the key is in the body")
	}
}

// TestBodyAloneAndLongKeys: a body alone is text or HTML by its first
// character; a key longer than Resend admits is sent as its digest,
// the same on every try.
func TestBodyAloneAndLongKeys(t *testing.T) {
	for body, field := range map[string]string{"Hello": `"text":"Hello"`, " <b>Hi</b>": `"html":" \u003cb\u003eHi\u003c/b\u003e"`} {
		rec := providertest.NewRecorder(t, func(w http.ResponseWriter) { _, _ = io.WriteString(w, `{"id":"em_2"}`) })
		m := message
		m.IdempotencyKey = strings.Repeat("k", 300)
		m.Content, _ = json.Marshal(map[string]string{"subject": "S", "body": body})
		_, r := rec.Send(rec.Provider(New, config(rec.Base)), m)
		if !strings.Contains(string(r.Body), field) {
			t.Fatalf("body %q: %s", body, r.Body)
		}
		if k := r.Header.Get("Idempotency-Key"); k != IdempotencyKey(m.IdempotencyKey) || len(k) != 64 {
			t.Fatalf("Idempotency-Key %q", k)
		}
	}
}
