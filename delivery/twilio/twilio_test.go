package twilio

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const (
	sid   = "AC0123456789abcdef0123456789abcdef"
	token = "tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
)

var message = providertest.Message("sms", "+14155550123", `{"body":"Your code is 1234 & more"}`)

// errorAnswer is Twilio's documented error answer.
func errorAnswer(name string, status, code int, msg string) providertest.Answer {
	return providertest.JSONAnswer(name, status, map[string]any{
		"code": code, "message": msg, "more_info": "https://www.twilio.com/docs/errors/" + name, "status": status,
	})
}

func config(base string) map[string]any {
	return map[string]any{"accountSid": sid, "authToken": token, "from": "+15005550006", "apiBaseUrl": base}
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
		Required: []string{"accountSid", "authToken", "from"},
		Message:  message,
		IsSend: func(r *http.Request) bool {
			return r.URL.Path == "/2010-04-01/Accounts/"+sid+"/Messages.json"
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"sid":"SM1234567890abcdef1234567890abcdef","status":"queued","to":"+14155550123"}`)
			return "SM1234567890abcdef1234567890abcdef"
		},
		NotSent: []providertest.Answer{
			errorAnswer("20003", 401, 20003, "Authenticate"),
			errorAnswer("20429", 429, 20429, "Too Many Requests"),
			errorAnswer("20500", 500, 20500, "Internal Server Error"),
			{Name: "503", Status: 503, Body: "Service Unavailable"},
			errorAnswer("21606", 400, 21606, "The From phone number is not a valid, SMS-capable inbound phone number"),
			errorAnswer("21408", 400, 21408, "Permission to send an SMS has not been enabled for the region"),
		},
		Rejected: []providertest.Answer{
			providertest.BadAddress(errorAnswer("21211", 400, 21211, "The 'To' number +1415 is not a valid phone number.")),
			providertest.BadAddress(errorAnswer("21217", 400, 21217, "Phone number does not appear to be valid")),
			providertest.BadAddress(errorAnswer("21614", 400, 21614, "'To' number is not a valid mobile number")),
			errorAnswer("21610", 400, 21610, "Attempt to send to unsubscribed recipient"),
			errorAnswer("21612", 400, 21612, "The 'To' phone number is not currently reachable"),
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid":"SMabc"}`)
	})
	r := rec.Exchange(rec.Provider(New, config(rec.Base)), message, "SMabc", providertest.Want{
		URI: "/2010-04-01/Accounts/" + sid + "/Messages.json",
		Header: map[string]string{
			"Content-Type":  "application/x-www-form-urlencoded",
			"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(sid+":"+token)),
		},
	})
	want := url.Values{"To": {"+14155550123"}, "From": {"+15005550006"}, "Body": {"Your code is 1234 & more"}}
	if form := formOf(r); form.Encode() != want.Encode() {
		t.Fatalf("form %v, want %v", form, want)
	}

	// A Messaging Service SID goes as MessagingServiceSid.
	cfg := config(rec.Base)
	cfg["from"] = "MG0123456789abcdef0123456789abcdef"
	_, r = rec.Send(rec.Provider(New, cfg), message)
	if f := formOf(r); f.Get("MessagingServiceSid") != cfg["from"] || f.Has("From") {
		t.Fatalf("form %v", f)
	}
}

func formOf(r providertest.Request) url.Values {
	form, _ := url.ParseQuery(string(r.Body))
	return form
}

func TestNewRefusesBadConfig(t *testing.T) {
	cfg := config("")
	delete(cfg, "apiBaseUrl")
	providertest.BadConfigs(t, New, cfg, map[string]map[string]any{
		"base url with a path": {"apiBaseUrl": "https://api.twilio.com/2010-04-01"},
		"base url not http":    {"apiBaseUrl": "ftp://api.twilio.com"},
		"sid with a slash":     {"accountSid": "AC1/../x"},
		"token not a string":   {"authToken": 42},
	})
	p, err := New(cfg, providertest.Deps())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*Provider).Endpoint; got != DefaultBaseURL+"/2010-04-01/Accounts/"+sid+"/Messages.json" {
		t.Fatalf("default endpoint %q", got)
	}
}
