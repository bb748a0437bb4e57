package slack

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const token = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"

var message = providertest.Message("chat", "C0123456789",
	`{"body":"Deploy <done> & \"green\"","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*Deploy* done"}}]}`)

// slackError is Slack's documented failure: HTTP 200, ok false, a name.
func slackError(name string) providertest.Answer {
	return providertest.Answer{Name: name, Status: 200, Body: `{"ok":false,"error":"` + name + `"}`}
}

func config(base string) map[string]any {
	return map[string]any{"botToken": token, "apiBaseUrl": base}
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
		New:      New,
		Config:   config,
		Secrets:  []string{token},
		Required: []string{"botToken"},
		Message:  message,
		IsSend:   func(r *http.Request) bool { return r.URL.Path == "/api/chat.postMessage" },
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, `{"ok":true,"channel":"C0123456789","ts":"1503435956.000247","message":{"text":"x","type":"message"}}`)
			return "1503435956.000247"
		},
		NotSent: []providertest.Answer{
			{Name: "429", Status: 429, Header: map[string]string{"Retry-After": "30"}, Body: `{"ok":false,"error":"ratelimited"}`},
			{Name: "503", Status: 503, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>unavailable</html>"},
			slackError("ratelimited"),
			slackError("invalid_auth"),
			slackError("not_authed"),
			slackError("token_revoked"),
			slackError("missing_scope"),
			slackError("internal_error"),
			slackError("service_unavailable"),
		},
		Rejected: []providertest.Answer{
			slackError("channel_not_found"),
			slackError("not_in_channel"),
			slackError("is_archived"),
			slackError("msg_too_long"),
			slackError("invalid_blocks"),
		},
		Unknown: []providertest.Answer{
			// Every answer of Slack's is a 200 that says in its body
			// whether the message was posted.
			{Name: "unreadable 200", Status: 200, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>"},
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C0123456789","ts":"1.2"}`)
	})
	r := rec.Exchange(rec.Provider(New, config(rec.Base+"/")), message, "1.2", providertest.Want{
		URI:    "/api/chat.postMessage",
		Header: map[string]string{"Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer " + token},
		Body:   `{"channel":"C0123456789","text":"Deploy \u003cdone\u003e \u0026 \"green\"","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*Deploy* done"}}]}`,
	})
	// The token is in the header only, never in the body.
	if strings.Contains(string(r.Body), token) {
		t.Fatal("the token is in the body")
	}
}

func TestPublicNameRepeatsOnlySlackNames(t *testing.T) {
	for in, want := range map[string]string{
		"channel_not_found": "channel_not_found",
		"":                  "no error name",
		"bad token xoxb-1":  "an unknown error name",
	} {
		if got := publicName(in); got != want {
			t.Errorf("publicName(%q) = %q, want %q", in, got, want)
		}
	}
}
