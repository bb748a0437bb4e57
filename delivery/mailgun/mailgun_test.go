package mailgun

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	apiKey     = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
	signingKey = "whk-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
)

var message = providertest.EmailMessage()

func config(base string) map[string]any {
	return map[string]any{"apiKey": apiKey, "domain": "mg.example.com", "fromEmail": "news@example.com", "fromName": "Acme",
		"webhookSigningKey": signingKey, "apiBaseUrl": base}
}

// messageAnswer is Mailgun's documented error answer.
func messageAnswer(name string, status int, msg string) providertest.Answer {
	return providertest.JSONAnswer(name, status, map[string]any{"message": msg})
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
		Secrets:  []string{apiKey, signingKey},
		Required: []string{"apiKey", "domain", "fromEmail"},
		Message:  message,
		IsSend: func(r *http.Request) bool {
			user, pass, ok := r.BasicAuth()
			return r.Method == http.MethodPost && r.URL.Path == "/v3/mg.example.com/messages" && ok && user == "api" && pass == apiKey
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"<20261127203000.1.ABCDEF@mg.example.com>","message":"Queued. Thank you."}`)
			return "20261127203000.1.ABCDEF@mg.example.com"
		},
		NotSent: []providertest.Answer{
			{Name: "401", Status: 401, Header: map[string]string{"Content-Type": "text/plain"}, Body: "Forbidden"},
			messageAnswer("403 sandbox", 403, "Domain mg.example.com is not allowed to send: Free accounts are for test purposes only."),
			messageAnswer("404 domain", 404, "Domain not found: mg.example.com"),
			messageAnswer("429", 429, "Too many requests"),
			messageAnswer("500", 500, "Internal Server Error"),
		},
		Rejected: []providertest.Answer{
			messageAnswer("400 invalid to", 400, "'to' parameter is not a valid address. please check documentation"),
			messageAnswer("413", 413, "request too large"),
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"id":"<m-1@mg.example.com>","message":"Queued. Thank you."}`)
	})
	r := rec.Exchange(rec.Provider(New, config(rec.Base)), message, "m-1@mg.example.com", providertest.Want{
		URI:    "/v3/mg.example.com/messages",
		Header: map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("api:"+apiKey))},
	})
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	form, err := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"]).ReadForm(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"from": `"Acme" <news@example.com>`, "to": "ada@example.com", "subject": "Welcome", "text": "Hi", "html": "<p>Hi</p>",
		"h:Reply-To": `"Support" <help@example.com>`, "h:List-Unsubscribe": "<https://herald.example.com/u/tok>",
		"h:List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
	}
	if len(form.Value) != len(want) {
		t.Fatalf("form %v", form.Value)
	}
	for k, v := range want {
		if got := form.Value[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, config("https://api.eu.mailgun.net"), map[string]map[string]any{
		"domain with a slash":  {"domain": "mg.example.com/../x"},
		"from with a name":     {"fromEmail": "Ada <ada@example.com>"},
		"base url with a path": {"apiBaseUrl": "https://api.mailgun.net/v3"},
		"key not a string":     {"apiKey": 42},
	})
}
