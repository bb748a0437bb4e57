package ses_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/mail"
	"testing"

	"github.com/heraldhq/herald/delivery/provider/providertest"
	"github.com/heraldhq/herald/delivery/ses"
)

func TestSuite(t *testing.T) {
	providertest.Run(t, harness())
}

func BenchmarkSend(b *testing.B) {
	providertest.Benchmark(b, harness())
}

// sesAnswer is an error answer of the SES v2 API: the status, the error
// type in X-Amzn-ErrorType and a JSON body with the message.
func sesAnswer(status int, code, text string) providertest.Answer {
	return providertest.Answer{
		Name:   code,
		Status: status,
		Header: map[string]string{
			"X-Amzn-ErrorType": code + ":http://internal.amazon.com/coral/com.amazonaws.sesv2/",
			"X-Amzn-RequestId": "req-1",
		},
		Body: `{"message":"` + text + `"}`,
	}
}

// harness describes the SES v2 API to the shared suite.
func harness() providertest.Harness {
	return providertest.Harness{
		New: ses.New,
		Config: func(base string) map[string]any {
			return map[string]any{
				"region": "eu-west-1", "accessKeyId": "AKIDEXAMPLE", "secretAccessKey": secret,
				"fromEmail": "noreply@herald.test", "fromName": "Herald", "endpoint": base,
			}
		},
		Secrets:  []string{secret},
		Required: []string{"region", "accessKeyId", "secretAccessKey", "fromEmail"},
		Message:  msg,
		IsSend: func(r *http.Request) bool {
			return r.Method == http.MethodPost && r.URL.Path == "/v2/email/outbound-emails"
		},
		// The receiver can drop a second copy of one Message-ID.
		SendKey: func(_ *http.Request, body []byte) string {
			var req struct {
				Content struct{ Raw struct{ Data []byte } }
			}
			if json.Unmarshal(body, &req) != nil {
				return ""
			}
			msg, err := mail.ReadMessage(bytes.NewReader(req.Content.Raw.Data))
			if err != nil {
				return ""
			}
			return msg.Header.Get("Message-Id")
		},
		Accept: func(w http.ResponseWriter, r *http.Request) string {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"MessageId":"0102019abc-ses-id"}`)
			return "0102019abc-ses-id"
		},
		NotSent: []providertest.Answer{
			sesAnswer(403, "SignatureDoesNotMatch", "The request signature we calculated does not match"),
			sesAnswer(403, "AccessDeniedException", "not authorized to perform ses:SendEmail"),
			{Name: "401", Status: 401, Body: `{"message":"Unauthorized"}`},
			sesAnswer(429, "TooManyRequestsException", "Too Many Requests"),
			sesAnswer(400, "Throttling", "Maximum sending rate exceeded."),
			sesAnswer(400, "SendingPausedException", "Sending is paused for this account"),
			sesAnswer(400, "AccountSuspendedException", "The account is suspended"),
			sesAnswer(400, "MailFromDomainNotVerifiedException", "MAIL FROM domain not verified"),
			sesAnswer(500, "InternalFailure", "Internal failure"),
			sesAnswer(503, "ServiceUnavailable", "Service unavailable"),
			{Name: "502 html", Status: 502, Header: map[string]string{"Content-Type": "text/html"}, Body: "<html>Bad Gateway</html>"},
		},
		Rejected: []providertest.Answer{
			sesAnswer(400, "MessageRejected", "Email address is not verified"),
			sesAnswer(400, "BadRequestException", "Illegal address"),
		},
	}
}
