package ses_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"

	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/ses"
)

const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

var now = time.Date(2026, 11, 24, 1, 2, 3, 0, time.UTC)

func newProvider(t *testing.T, endpoint string, client *http.Client) provider.Provider {
	t.Helper()
	if client == nil {
		client = &http.Client{}
	}
	p, err := ses.New(map[string]any{
		"region": "eu-west-1", "accessKeyId": "AKIDEXAMPLE", "secretAccessKey": secret,
		"fromEmail": "noreply@herald.test", "fromName": "Herald", "endpoint": endpoint,
	}, provider.Deps{HTTPClient: client, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var msg = provider.Message{
	Tenant: "t1", RunID: "run_1", StepID: "welcome", IdempotencyKey: "run_1:welcome", To: "ada@example.com",
	Content: json.RawMessage(`{"subject":"Welcome ✓","html":"<p>Hi <b>Ada</b></p>","text":"Hi Ada","replyTo":"help@herald.test"}`),
}

// sigV4 is the Authorization header SigV4 gives the SES v2 API.
var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\d{8}/eu-west-1/ses/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$`)

func TestSendEmail(t *testing.T) {
	type request struct {
		method, path, auth, contentType string
		body                            []byte
	}
	got := make(chan request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- request{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), b}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"MessageId":"0102019abc-ses-id"}`)
	}))
	defer srv.Close()

	id, err := newProvider(t, srv.URL, srv.Client()).Send(context.Background(), msg)
	if err != nil || id != "0102019abc-ses-id" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	req := <-got
	if req.method != http.MethodPost || req.path != "/v2/email/outbound-emails" || req.contentType != "application/json" {
		t.Errorf("request %s %s (%s)", req.method, req.path, req.contentType)
	}
	if !sigV4.MatchString(req.auth) {
		t.Errorf("Authorization = %q, want SigV4 for eu-west-1/ses", req.auth)
	}
	var body struct {
		FromEmailAddress string
		Destination      struct{ ToAddresses []string }
		Content          struct{ Raw struct{ Data string } }
	}
	dec := json.NewDecoder(bytes.NewReader(req.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("body %s: %v", req.body, err)
	}
	if body.FromEmailAddress != "noreply@herald.test" || len(body.Destination.ToAddresses) != 1 || body.Destination.ToAddresses[0] != "ada@example.com" {
		t.Errorf("body %s", req.body)
	}
	raw, err := base64.StdEncoding.DecodeString(body.Content.Raw.Data)
	if err != nil {
		t.Fatalf("Content.Raw.Data is not base64: %v", err)
	}
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := gomail.Header{Header: e.Header}
	if s, _ := h.Subject(); s != "Welcome ✓" {
		t.Errorf("Subject = %q", s)
	}
	if id, _ := h.MessageID(); id != email.MessageID("t1", "run_1:welcome", "noreply@herald.test") {
		t.Errorf("Message-Id = %q", id)
	}
	if d, _ := h.Date(); !d.Equal(now) {
		t.Errorf("Date = %q", h.Get("Date"))
	}
	if rt := h.Get("Reply-To"); rt != "<help@herald.test>" {
		t.Errorf("Reply-To = %q", rt)
	}
	if typ, _, _ := h.ContentType(); typ != "multipart/alternative" {
		t.Errorf("Content-Type = %q", h.Get("Content-Type"))
	}
	if strings.Contains(string(req.body), secret) {
		t.Error("the secret key is in the request")
	}
}

// sesError answers as the SES v2 API does: the status, the error type in
// X-Amzn-ErrorType and a JSON body with the message.
func sesError(status int, code, text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code+":http://internal.amazon.com/coral/com.amazonaws.sesv2/")
		w.Header().Set("X-Amzn-RequestId", "req-1")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"message": text})
	}
}

func TestSendErrors(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    error
		public  string
	}{
		{"message rejected", sesError(400, "MessageRejected", "Email address is not verified"), 0, provider.ErrRejected, "ses: answered 400 MessageRejected"},
		{"bad request", sesError(400, "BadRequestException", "Illegal address"), 0, provider.ErrRejected, "ses: answered 400 BadRequestException"},
		{"throttled", sesError(429, "TooManyRequestsException", "slow down"), 0, provider.ErrNotSent, "ses: answered 429 TooManyRequestsException"},
		{"sending paused", sesError(400, "SendingPausedException", "paused"), 0, provider.ErrNotSent, "ses: answered 400 SendingPausedException"},
		{"signature", sesError(403, "SignatureDoesNotMatch", "bad signature"), 0, provider.ErrNotSent, "ses: answered 403 SignatureDoesNotMatch"},
		{"internal failure", sesError(500, "InternalFailure", "oops"), 0, provider.ErrNotSent, "ses: answered 500 InternalFailure"},
		{"unavailable", sesError(503, "ServiceUnavailable", "later"), 0, provider.ErrNotSent, "ses: answered 503 ServiceUnavailable"},
		{"a code that is no name", sesError(500, "<b>hi there</b>", "x"), 0, provider.ErrNotSent, "ses: answered 500 unknown"},
		{"connection dropped after the request", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}, 0, provider.ErrOutcomeUnknown, "ses: no answer after the request was sent"},
		{"timeout after the request", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}, 300 * time.Millisecond, provider.ErrOutcomeUnknown, "ses: no answer after the request was sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			_, err := newProvider(t, srv.URL, srv.Client()).Send(ctx, msg)
			checkKind(t, err, tc.want)
			if got := provider.PublicMessage(err); got != tc.public {
				t.Errorf("public message %q, want %q", got, tc.public)
			}
			if err != nil && strings.Contains(err.Error(), secret) || strings.Contains(provider.PublicMessage(err), secret) {
				t.Errorf("the secret key is in the error: %v", err)
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		_, err = newProvider(t, "http://"+l.Addr().String(), nil).Send(context.Background(), msg)
		checkKind(t, err, provider.ErrNotSent)
	})
	t.Run("invalid replyTo", func(t *testing.T) {
		m := msg
		m.Content = json.RawMessage(`{"subject":"x","body":"x","replyTo":"a@b\r\nBcc: eve@example.com"}`)
		_, err := newProvider(t, "http://127.0.0.1:1", nil).Send(context.Background(), m)
		checkKind(t, err, provider.ErrRejected)
		if !errors.Is(err, email.ErrInvalid) {
			t.Errorf("err = %v, want email.ErrInvalid", err)
		}
	})
}

func checkKind(t *testing.T, err, want error) {
	t.Helper()
	var matched []error
	for _, k := range []error{provider.ErrNotSent, provider.ErrOutcomeUnknown, provider.ErrRejected} {
		if errors.Is(err, k) {
			matched = append(matched, k)
		}
	}
	if len(matched) != 1 || matched[0] != want {
		t.Errorf("err = %v matches %v, want only %v", err, matched, want)
	}
}

func TestNewRefusesBadConfigs(t *testing.T) {
	for name, cfg := range map[string]map[string]any{
		"no region":         {"accessKeyId": "A", "secretAccessKey": secret, "fromEmail": "a@b"},
		"no secret":         {"region": "r", "accessKeyId": "A", "fromEmail": "a@b"},
		"secret not string": {"region": "r", "accessKeyId": "A", "secretAccessKey": 42, "fromEmail": "a@b"},
		"endpoint path":     {"region": "r", "accessKeyId": "A", "secretAccessKey": secret, "fromEmail": "a@b", "endpoint": "https://x.test/v2"},
		"endpoint scheme":   {"region": "r", "accessKeyId": "A", "secretAccessKey": secret, "fromEmail": "a@b", "endpoint": "ftp://x.test"},
	} {
		_, err := ses.New(cfg, provider.Deps{})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestNoRetryInside checks that the SDK retries nothing: a retry after a
// lost answer could send twice, and delivery decides retries itself.
func TestNoRetryInside(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		sesError(503, "ServiceUnavailable", "later")(w, r)
	}))
	defer srv.Close()
	_, err := newProvider(t, srv.URL, srv.Client()).Send(context.Background(), msg)
	checkKind(t, err, provider.ErrNotSent)
	if n.Load() != 1 {
		t.Errorf("SES was called %d times, want 1", n.Load())
	}
}
