package expo

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
)

const accessToken = "expo-access-9f8e7d6c5b4a39281706f5e4d3c2b1a0"

var message = providertest.Message("push", "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]", `{"title":"Hello","body":"World","data":{"orderId":"42"}}`)

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
		Unknown: []providertest.Answer{
			// A 200 carries the ticket that says whether Expo took the
			// message.
			{Name: "unreadable 200", Status: 200, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>"},
		},
	}
}

func TestExactRequest(t *testing.T) {
	rec := providertest.NewRecorder(t, func(w http.ResponseWriter) {
		// A single ticket, not a list, is answered as well.
		_, _ = io.WriteString(w, `{"data":{"status":"ok","id":"T1"}}`)
	})
	rec.Exchange(rec.Provider(New, config(rec.Base)), message, "T1", providertest.Want{
		URI:    "/--/api/v2/push/send",
		Header: map[string]string{"Authorization": "Bearer " + accessToken, "Content-Type": "application/json"},
		Body:   `[{"to":"ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]","title":"Hello","body":"World","data":{"orderId":"42"}}]`,
	})

	// Without an access token, no Authorization header.
	rec.Exchange(rec.Provider(New, map[string]any{"apiBaseUrl": rec.Base}), message, "T1", providertest.Want{
		Header: map[string]string{"Authorization": ""},
	})
}

func TestNewRefusesBadConfig(t *testing.T) {
	providertest.BadConfigs(t, New, nil, map[string]map[string]any{
		"base url with a path": {"apiBaseUrl": "https://exp.host/--/api"},
		"token not a string":   {"accessToken": 1},
	})
	p, err := New(map[string]any{}, providertest.Deps())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*Provider).Endpoint; got != "https://exp.host/--/api/v2/push/send" {
		t.Fatalf("default endpoint %q", got)
	}
}
