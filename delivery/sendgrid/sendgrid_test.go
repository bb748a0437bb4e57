package sendgrid

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const apiKey = "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789abcdefghijklmnopqrstuvwxyzAB"

var message = providertest.EmailMessage()

func config(base string) map[string]any {
	return map[string]any{"apiKey": apiKey, "fromEmail": "news@example.com", "fromName": "Acme", "apiBaseUrl": base,
		"webhookPublicKey": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"}
}

// errorAnswer is SendGrid's documented error answer.
func errorAnswer(name string, status int, field, msg string) providertest.Answer {
	return providertest.JSONAnswer(name, status, map[string]any{"errors": []map[string]any{{"message": msg, "field": field, "help": nil}}})
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
		Secrets:  []string{apiKey},
		Required: []string{"apiKey", "fromEmail"},
		Message:  message,
		IsSend: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/v3/mail/send" && r.Header.Get("Authorization") == "Bearer "+apiKey
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("X-Message-Id", "W3LhXpMXSOqT8KPUWBC3ig")
			w.WriteHeader(http.StatusAccepted)
			return "W3LhXpMXSOqT8KPUWBC3ig"
		},
		NotSent: []providertest.Answer{
			errorAnswer("401", 401, "", "The provided authorization grant is invalid, expired, or revoked"),
			errorAnswer("403 sender identity", 403, "from", "The from address does not match a verified Sender Identity."),
			errorAnswer("429", 429, "", "too many requests"),
			errorAnswer("500", 500, "", "internal error"),
			{Name: "503", Status: 503, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>unavailable</html>"},
		},
		Rejected: []providertest.Answer{
			errorAnswer("400 invalid to", 400, "personalizations.0.to.0.email", "Does not contain a valid address."),
			errorAnswer("400 no subject", 400, "subject", "The subject is required."),
			errorAnswer("413", 413, "", "Payload Too Large"),
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		w.Header().Set("X-Message-Id", "id-1")
		w.WriteHeader(http.StatusAccepted)
	})
	rec.Exchange(rec.Provider(New, config(rec.Base)), message, "id-1", providertest.Want{
		URI:    "/v3/mail/send",
		Header: map[string]string{"Authorization": "Bearer " + apiKey, "Content-Type": "application/json"},
		Body: `{"personalizations":[{"to":[{"email":"ada@example.com"}]}],"from":{"email":"news@example.com","name":"Acme"},` +
			`"reply_to":{"email":"help@example.com","name":"Support"},"subject":"Welcome",` +
			`"content":[{"type":"text/plain","value":"Hi"},{"type":"text/html","value":"\u003cp\u003eHi\u003c/p\u003e"}],` +
			`"headers":{"List-Unsubscribe":"\u003chttps://herald.example.com/u/tok\u003e","List-Unsubscribe-Post":"List-Unsubscribe=One-Click"}}`,
	})
}

// TestErrorNamesFieldsNotValues: the tenant sees the fields SendGrid
// refused, never its text, which quotes the address.
func TestErrorNamesFieldsNotValues(t *testing.T) {
	a := errorAnswer("400", 400, "personalizations.0.to.0.email", "ada@exa mple.com does not contain a valid address.")
	base, deps := providertest.Loopback(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(a.Status)
		_, _ = w.Write([]byte(a.Body))
	})
	p, _ := New(config(base), deps)
	_, err := p.Send(context.Background(), message)
	var perr *provider.Error
	if !errors.As(err, &perr) || !errors.Is(err, provider.ErrRejected) {
		t.Fatalf("err %v", err)
	}
	if perr.Public != "sendgrid answered 400 on personalizations.0.to.0.email" || strings.Contains(err.Error(), "ada@") {
		t.Fatalf("public %q, error %q", perr.Public, err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, config("https://api.sendgrid.com"), map[string]map[string]any{
		"from with a name":     {"fromEmail": "Ada <ada@example.com>"},
		"base url with a path": {"apiBaseUrl": "https://api.sendgrid.com/v3"},
		"key not a string":     {"apiKey": 42},
		"public key not text":  {"webhookPublicKey": true},
	})
}
