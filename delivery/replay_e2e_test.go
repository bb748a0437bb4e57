package delivery_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testinbound"
)

// TestMailgunTokenIsUsedOnce: Mailgun's signature covers its timestamp
// and token, not the event. A captured request's signature put on a
// forged hard bounce is refused (401, no report, no suppression), before
// and after the service restarts; so is one signed more than five
// minutes ago. The provider's retry of the very
// request it sent is no forgery: it is heard, and records nothing twice.
func TestMailgunTokenIsUsedOnce(t *testing.T) {
	const signingKey = "mg-webhook-signing-key"
	opts := testherald.Options{DataDir: t.TempDir(), Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic}}
	h := testherald.Start(t, opts)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"id":"<20261127120000.1.5C1F3E2A0B@mg.herald.test>","message":"Queued. Thank you."}`)
	}))
	t.Cleanup(api.Close)
	_, key := h.Tenant("Acme")
	f := &inboundFixture{t: t, h: h, key: key}
	runID, inboundURL := f.sendOne("email-mailgun", map[string]any{"apiKey": "mg-api-key", "domain": "mg.herald.test",
		"fromEmail": "noreply@herald.test", "webhookSigningKey": signingKey, "apiBaseUrl": api.URL}, "email", "ada@example.com", noted)
	path := strings.TrimPrefix(inboundURL, inboundPublic)

	event := func(at time.Time, tok, id, typ, severity string) string {
		ts := fmt.Sprint(at.Unix())
		return `{"signature":{"timestamp":"` + ts + `","token":"` + tok + `","signature":"` +
			testinbound.MailgunSignature(signingKey, ts, tok) + `"},"event-data":{"id":"` + id + `","event":"` + typ +
			`","severity":"` + severity + `","delivery-status":{"code":550},"message":{"headers":{"message-id":"20261127120000.1.5C1F3E2A0B@mg.herald.test"}}}}`
	}
	post := func(h *testherald.Herald, body string) int {
		t.Helper()
		resp, err := h.Client.Post(h.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const tok = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
	now := time.Now()
	delivered := event(now, tok, "ev-delivered", "delivered", "")
	if status := post(h, delivered); status != 200 {
		t.Fatalf("the delivered event: %d", status)
	}
	// The same signature block on a forged hard bounce.
	if status := post(h, event(now, tok, "ev-forged", "failed", "permanent")); status != 401 {
		t.Fatalf("a forged event with a used token: %d, want 401", status)
	}
	// Mailgun's own retry of the delivered event.
	if status := post(h, delivered); status != 202 {
		t.Fatalf("the retry of the delivered event: %d, want 202 (heard, recorded before)", status)
	}
	// A signature of six minutes ago, on an unused token.
	if status := post(h, event(now.Add(-6*time.Minute), "b9df1fec3ee9412eef7d3516346695f56bb02e2f0a08a04ef1", "ev-old", "failed", "permanent")); status != 401 {
		t.Fatalf("a stale signature: %d, want 401", status)
	}
	// The uses are kept by the NATS server, on its store: a restarted
	// service knows them.
	h.Stop()
	h = testherald.Start(t, opts)
	f.h = h
	if status := post(h, event(now, tok, "ev-forged-2", "failed", "permanent")); status != 401 {
		t.Fatalf("a forged event with a used token, after a restart: %d, want 401", status)
	}
	rows := f.rows(runID)
	if len(rows) != 1 || rows[0].Status != "delivered" || len(rows[0].Events) != 1 {
		t.Fatalf("after the forgeries: %+v", rows)
	}
	if sup := f.suppressions(); len(sup) != 0 {
		t.Fatalf("a forgery suppressed: %v", sup)
	}
}

// TestSESHearsOnlyItsTopic: an SNS message signed by Amazon's certificate
// but of another account's topic is refused, its subscription
// confirmation is not answered, and a bounce of it suppresses nothing;
// the channel's own topic is heard.
func TestSESHearsOnlyItsTopic(t *testing.T) {
	sns := newSNSAmazon(t)
	var confirmed []string
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic},
		SNSClient: sns.clientConfirming(&confirmed)})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"MessageId":"010701928e5e0c7b-0000"}`)
	}))
	t.Cleanup(api.Close)
	_, key := h.Tenant("Acme")
	f := &inboundFixture{t: t, h: h, key: key}
	runID, inboundURL := f.sendOne("email-ses", map[string]any{"region": "eu-west-1", "accessKeyId": "AKIDEXAMPLE",
		"secretAccessKey": "ses-secret-key", "fromEmail": "noreply@herald.test", "endpoint": api.URL, "topicArn": sesTopicArn},
		"email", "ada@example.com", noted)
	path := strings.TrimPrefix(inboundURL, inboundPublic)
	post := func(body string) int {
		t.Helper()
		resp, err := h.Client.Post(h.URL()+path, "text/plain; charset=UTF-8", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const attacker = "arn:aws:sns:eu-west-1:999999999999:attacker"
	bounce := `{"eventType":"Bounce","bounce":{"bounceType":"Permanent","bounceSubType":"General"},"mail":{"messageId":"010701928e5e0c7b-0000"}}`
	if status := post(sns.confirmation(t, attacker)); status != 401 {
		t.Fatalf("another topic's subscription confirmation: %d, want 401", status)
	}
	if status := post(sns.notificationOf(t, attacker, "n-attacker", bounce)); status != 401 {
		t.Fatalf("another topic's bounce: %d, want 401", status)
	}
	if len(confirmed) != 0 {
		t.Fatalf("confirmed %v", confirmed)
	}
	if sup := f.suppressions(); len(sup) != 0 {
		t.Fatalf("another topic's bounce suppressed: %v", sup)
	}
	if status := post(sns.confirmation(t, sesTopicArn)); status != 202 || len(confirmed) != 1 {
		t.Fatalf("the channel's topic's confirmation: %d, confirmed %v", status, confirmed)
	}
	if status := post(sns.notificationOf(t, sesTopicArn, "n-own", bounce)); status != 200 {
		t.Fatalf("the channel's topic's bounce: %d, want 200", status)
	}
	if rows := f.rows(runID); len(rows) != 1 || rows[0].Status != "bounced" {
		t.Fatalf("after the bounce: %+v", rows)
	}
}
