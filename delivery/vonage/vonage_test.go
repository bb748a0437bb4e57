package vonage

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	apiKey    = "a1b2c3d4"
	apiSecret = "Sec9f8e7d6c5b4a39"
	sigSecret = "sig-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
)

var message = providertest.Message("sms", "+447700900000", `{"body":"Your code is 1234 & more"}`)

func config(base string) map[string]any {
	return map[string]any{"apiKey": apiKey, "apiSecret": apiSecret, "from": "Acme", "signatureSecret": sigSecret, "apiBaseUrl": base}
}

// statusAnswer is the SMS API's 200 answer with one part of status st.
func statusAnswer(name, st, text string) providertest.Answer {
	return providertest.Answer{Name: name, Status: 200, Body: fmt.Sprintf(
		`{"message-count":"1","messages":[{"status":%q,"error-text":%q}]}`, st, text)}
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
		Secrets:  []string{apiSecret, sigSecret},
		Required: []string{"apiKey", "apiSecret", "from"},
		Message:  message,
		IsSend:   func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/sms/json" },
		// Vonage drops nothing, but echoes client-ref in its receipts.
		SendKey: func(_ *http.Request, body []byte) string {
			form, _ := url.ParseQuery(string(body))
			return form.Get("client-ref")
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"message-count":"1","messages":[{"to":"447700900000","message-id":"0C000000217B7F02","status":"0",`+
				`"remaining-balance":"15.53590000","message-price":"0.03330000","network":"23410"}]}`)
			return "0C000000217B7F02"
		},
		NotSent: []providertest.Answer{
			{Name: "401", Status: 401, Body: `{"type":"https://developer.nexmo.com/api-errors#unauthorized","title":"Unauthorized"}`},
			{Name: "429", Status: 429, Body: `{"title":"Too Many Requests"}`},
			{Name: "500", Status: 500, Body: "Internal Server Error"},
			statusAnswer("1 throttled", "1", "Throughput Rate Exceeded - please wait [ 20 ] and retry"),
			statusAnswer("4 bad credentials", "4", "Bad Credentials"),
			statusAnswer("5 internal", "5", "Internal Error"),
			statusAnswer("9 no credit", "9", "Quota Exceeded - rejected"),
			statusAnswer("29 not whitelisted", "29", "Non White-listed Destination - rejected"),
		},
		Rejected: []providertest.Answer{
			statusAnswer("3 invalid to", "3", "Invalid to address"),
			statusAnswer("6 unroutable", "6", "Unroutable message - rejected"),
			statusAnswer("7 barred", "7", "Number barred"),
			{Name: "33 deactivated", Status: 200, BadAddress: true,
				Body: `{"message-count":"1","messages":[{"status":"33","error-text":"Number de-activated"}]}`},
			// A message in several parts fails when any part is refused,
			// and never as not sent once a part went out (failover would
			// send that part again).
			{Name: "later part refused", Status: 200,
				Body: `{"messages":[{"status":"0","message-id":"A1"},{"status":"1","error-text":"Throttled"}]}`},
		},
		Unknown: []providertest.Answer{
			// Every answer of the SMS API is a 200 that says in its body
			// whether each part was taken.
			{Name: "unreadable 200", Status: 200, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>"},
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, `{"message-count":"2","messages":[{"status":"0","message-id":"A1"},{"status":"0","message-id":"A2"}]}`)
	})
	p := rec.Provider(New, config(rec.Base))
	r := rec.Exchange(p, message, "A1", providertest.Want{
		URI: "/sms/json", Header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"},
	})
	form, _ := url.ParseQuery(string(r.Body))
	want := url.Values{"api_key": {apiKey}, "api_secret": {apiSecret}, "from": {"Acme"}, "to": {"447700900000"},
		"text": {"Your code is 1234 & more"}, "type": {"text"}, "client-ref": {form.Get("client-ref")}}
	if form.Encode() != want.Encode() || len(form.Get("client-ref")) != 32 {
		t.Fatalf("form %v, want %v", form, want)
	}

	// A body outside ASCII goes as unicode; every try of one send carries
	// the same client-ref.
	m := message
	m.Content = json.RawMessage(`{"body":"Grüße"}`)
	_, r = rec.Send(p, m)
	again, _ := url.ParseQuery(string(r.Body))
	if again.Get("type") != "unicode" || again.Get("client-ref") != form.Get("client-ref") {
		t.Fatalf("form %v", again)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, config("https://rest.nexmo.com"), map[string]map[string]any{
		"base url with a path": {"apiBaseUrl": "https://rest.nexmo.com/sms"},
		"secret not a string":  {"apiSecret": 42},
		"empty from":           {"from": ""},
	})
}
