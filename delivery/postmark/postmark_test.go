package postmark

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const token = "pm-server-token-3b1f8a2c-9d4e-4f5a-8b6c-7d8e9f0a1b2c"

var message = providertest.EmailMessage()

func config(base string) map[string]any {
	return map[string]any{"serverToken": token, "fromEmail": "news@example.com", "fromName": "Acme, Inc.", "apiBaseUrl": base}
}

// errorAnswer is Postmark's documented error answer.
func errorAnswer(name string, status, code int, msg string) providertest.Answer {
	return providertest.JSONAnswer(name, status, map[string]any{"ErrorCode": code, "Message": msg})
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
		Required: []string{"serverToken", "fromEmail"},
		Message:  message,
		IsSend: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/email" && r.Header.Get("X-Postmark-Server-Token") == token
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"To":"ada@example.com","SubmittedAt":"2026-11-27T20:30:00.0000000Z","MessageID":"b7bc2f4a-e38e-4336-af7d-e6c392c2f817","ErrorCode":0,"Message":"OK"}`)
			return "b7bc2f4a-e38e-4336-af7d-e6c392c2f817"
		},
		NotSent: []providertest.Answer{
			errorAnswer("10 bad token", 401, 10, "The Server Token you provided in the X-Postmark-Server-Token request header was invalid."),
			errorAnswer("400 sender signature", 422, 400, "The 'From' address you supplied is not a Sender Signature on your account."),
			errorAnswer("405 not allowed", 422, 405, "Not allowed to send: your account has run out of credits."),
			errorAnswer("412 pending", 422, 412, "While your account is pending approval, all recipient addresses must share the same domain as the From address."),
			errorAnswer("429", 429, 429, "Rate limit exceeded"),
			errorAnswer("500", 500, 0, "Internal server error"),
			{Name: "503", Status: 503, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>Service Unavailable</html>"},
		},
		Rejected: []providertest.Answer{
			errorAnswer("300 invalid request", 422, 300, "Error parsing 'To': Illegal email address 'ada@'. It must contain the '@' symbol."),
			errorAnswer("406 inactive recipient", 422, 406, "You tried to send to recipient(s) that have been marked as inactive."),
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"MessageID":"m-1","ErrorCode":0,"Message":"OK"}`)
	})
	cfg := config(rec.Base)
	cfg["messageStream"] = "broadcast"
	rec.Exchange(rec.Provider(New, cfg), message, "m-1", providertest.Want{
		URI:    "/email",
		Header: map[string]string{"X-Postmark-Server-Token": token, "Accept": "application/json", "Content-Type": "application/json"},
		Body: `{"From":"\"Acme, Inc.\" \u003cnews@example.com\u003e","To":"ada@example.com","Subject":"Welcome",` +
			`"HtmlBody":"\u003cp\u003eHi\u003c/p\u003e","TextBody":"Hi","ReplyTo":"\"Support\" \u003chelp@example.com\u003e",` +
			`"Headers":[{"Name":"List-Unsubscribe","Value":"\u003chttps://herald.example.com/u/tok\u003e"},` +
			`{"Name":"List-Unsubscribe-Post","Value":"List-Unsubscribe=One-Click"}],"MessageStream":"broadcast"}`,
	})

	// A body alone follows the SMTP provider's rule: text unless it looks
	// like HTML; no name, no stream, no unsubscribe.
	cfg = config(rec.Base)
	delete(cfg, "fromName")
	m := message
	m.Content, m.ListUnsubscribe = json.RawMessage(`{"subject":"S","body":"plain"}`), ""
	rec.Exchange(rec.Provider(New, cfg), m, "m-1", providertest.Want{
		Body: `{"From":"news@example.com","To":"ada@example.com","Subject":"S","TextBody":"plain"}`,
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, config("https://api.postmarkapp.com"), map[string]map[string]any{
		"from with a name":     {"fromEmail": "Ada <ada@example.com>"},
		"from name line break": {"fromName": "A\r\nBcc: x@y"},
		"base url with a path": {"apiBaseUrl": "https://api.postmarkapp.com/email"},
		"token not a string":   {"serverToken": 42},
	})
	cfg := config("")
	delete(cfg, "apiBaseUrl")
	p, err := New(cfg, providertest.Deps())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*Provider).Endpoint; got != "https://api.postmarkapp.com/email" {
		t.Fatalf("default endpoint %q", got)
	}
}
