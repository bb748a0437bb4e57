package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testinbound"
	"github.com/heraldhq/herald/internal/testwait"
)

// resendAPI is a loopback server speaking Resend's POST /emails: each
// email gets the id em_<n>.
type resendAPI struct {
	mu  sync.Mutex
	to  []string
	srv *httptest.Server
}

func startResendAPI(t *testing.T) *resendAPI {
	a := &resendAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e struct{ To []string }
		if r.URL.Path != "/emails" || r.Header.Get("Authorization") != "Bearer re_test_key" ||
			json.NewDecoder(r.Body).Decode(&e) != nil || len(e.To) != 1 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		a.to = append(a.to, e.To[0])
		n := len(a.to)
		a.mu.Unlock()
		fmt.Fprintf(w, `{"id":"em_%d"}`, n)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *resendAPI) sent() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string{}, a.to...)
}

// hookReceiver is a loopback endpoint of outbound webhooks.
type hookReceiver struct {
	mu     sync.Mutex
	bodies []map[string]any
	srv    *httptest.Server
}

func startHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// ofType returns the bodies received of type typ.
func (h *hookReceiver) ofType(typ string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, b := range h.bodies {
		if b["type"] == typ {
			out = append(out, b)
		}
	}
	return out
}

const (
	resendSecret  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	inboundPublic = "https://herald.example"
)

type inboundFixture struct {
	t     *testing.T
	h     *testherald.Herald
	key   string
	api   *resendAPI
	hooks *hookReceiver
}

func (f *inboundFixture) call(method, path string, body any, status int) testherald.Response {
	f.t.Helper()
	r := f.h.Do(method, path, f.key, body)
	if r.Status != status {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
	}
	return r
}

// inboundPath is the path of the channel's inboundUrl, which the channel
// list shows under the public URL.
func (f *inboundFixture) inboundPath() string {
	f.t.Helper()
	var chs []struct{ ChannelKey, InboundURL string }
	f.call("GET", "/v1/channels", nil, 200).JSON(f.t, &chs)
	for _, c := range chs {
		if c.ChannelKey == "email-resend" {
			p, ok := strings.CutPrefix(c.InboundURL, inboundPublic)
			if !ok || !strings.HasPrefix(p, "/in/") {
				f.t.Fatalf("inboundUrl %q", c.InboundURL)
			}
			return p
		}
	}
	f.t.Fatal("no email-resend channel")
	return ""
}

// post posts a Resend event, signed with secret (svix headers), to path.
func (f *inboundFixture) post(path, secret, eventID, body string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.h.URL()+path, bytes.NewReader([]byte(body)))
	testinbound.SignSvix(f.t, req.Header, secret, eventID, time.Now(), []byte(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.h.Client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type reportedRow struct {
	AttemptID, Status, ProviderMessageID, Address string
	Events                                        []struct{ Type, At, Detail string }
}

func (f *inboundFixture) rows(runID string) []reportedRow {
	f.t.Helper()
	var l struct{ Data []reportedRow }
	f.call("GET", "/v1/deliveries?runId="+runID, nil, 200).JSON(f.t, &l)
	return l.Data
}

func (f *inboundFixture) suppressions() map[string]string {
	f.t.Helper()
	var l struct{ Data []suppressionRow }
	f.call("GET", "/v1/suppressions", nil, 200).JSON(f.t, &l)
	out := map[string]string{}
	for _, s := range l.Data {
		out[s.Address] = s.Reason
	}
	return out
}

// sendOne sends through a channel of its own: the tenant's channel of
// channelKey with config, the subscriber ada with to as its contact of
// kind, and wf run to ada until it completes. It returns the run's id
// and the channel's inboundUrl.
func (f *inboundFixture) sendOne(channelKey string, config map[string]any, kind, to string, wf *bridge.Workflow) (runID, inboundURL string) {
	f.t.Helper()
	f.call("POST", "/v1/channels", map[string]any{"channelKey": channelKey, "config": config}, 201)
	f.call("PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{kind: []string{to}}}, 201)
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(wf))
	var tr struct{ Runs []struct{ RunID string } }
	f.call("POST", "/v1/events", map[string]any{"workflowId": wf.ID(), "to": map[string]any{"subscriberId": "ada"}}, 202).JSON(f.t, &tr)
	f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed")
	var chs []struct{ ChannelKey, InboundURL string }
	f.call("GET", "/v1/channels", nil, 200).JSON(f.t, &chs)
	return tr.Runs[0].RunID, chs[0].InboundURL
}

// run triggers noted for subscriber and waits for its end.
func (f *inboundFixture) run(subscriber string) (runID string, seen any) {
	f.t.Helper()
	var tr struct{ Runs []struct{ RunID string } }
	f.call("POST", "/v1/events", map[string]any{"workflowId": "noted", "to": map[string]any{"subscriberId": subscriber}}, 202).JSON(f.t, &tr)
	run := f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed")
	if run["status"] != "completed" {
		f.t.Fatalf("run %v", run)
	}
	for _, s := range run["steps"].([]any) {
		if st := s.(map[string]any); st["stepId"] == "seen" {
			seen = st["output"]
		}
	}
	return tr.Runs[0].RunID, seen
}

// TestResendBounceEndToEnd: an email sent through email-resend (a
// loopback Resend API), then a signed email.bounced posted to the
// channel's inboundUrl: the delivery shows bounced with its event, a
// delivery.bounced webhook reaches a loopback endpoint, the address is
// suppressed and the next run's send to it is skipped suppressed. The
// same event again changes nothing; a tampered one is 401 and changes
// nothing; an unknown message is 202. A complaint suppresses, an open
// does not. A rotation retires the URL shown before.
func TestResendBounceEndToEnd(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic,
		"HERALD_WEBHOOK_RETRY_BASE": "50ms"}})
	_, key := h.Tenant("Acme")
	f := &inboundFixture{t: t, h: h, key: key, api: startResendAPI(t), hooks: startHookReceiver(t)}
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "email-resend", "config": map[string]any{
		"apiKey": "re_test_key", "fromEmail": "noreply@herald.test", "webhookSecret": resendSecret,
		"apiBaseUrl": f.api.srv.URL}}, 201)
	f.call("POST", "/v1/webhooks", map[string]any{"url": f.hooks.srv.URL + "/hook",
		"events": []string{"delivery.bounced", "delivery.complained", "delivery.opened"}}, 201)
	for sub, addr := range map[string]string{"ada": "ada@example.com", "bob": "bob@example.com", "cy": "cy@example.com"} {
		f.call("PUT", "/v1/subscribers/"+sub, map[string]any{"contacts": map[string]any{"email": []string{addr}}}, 201)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(noted))
	path := f.inboundPath()

	runID, seen := f.run("ada")
	rows := f.rows(runID)
	if seen != "sent" || len(rows) != 1 || rows[0].Status != "sent" || rows[0].ProviderMessageID != "em_1" {
		t.Fatalf("the send: %v %+v", seen, rows)
	}

	// A tampered event is refused and writes nothing.
	req := testinbound.ResendEvent("email.bounced", "em_1", "Permanent")
	if status, body := f.post(path, "whsec_c2VjcmV0LW9mLWEtcm90YXRlZC1lbmRwb2ludA==", "msg_bounce", req); status != 401 ||
		strings.Contains(body, "em_1") {
		t.Fatalf("another key: %d %s", status, body)
	}
	if r := f.rows(runID); r[0].Status != "sent" || len(r[0].Events) != 0 || len(f.suppressions()) != 0 {
		t.Fatalf("a refused event changed the row: %+v", r)
	}

	// The bounce.
	if status, body := f.post(path, resendSecret, "msg_bounce", req); status != 200 || body != `{"status":"recorded"}`+"\n" && body != `{"status":"recorded"}` {
		t.Fatalf("bounce: %d %s", status, body)
	}
	rows = f.rows(runID)
	if rows[0].Status != "bounced" || len(rows[0].Events) != 1 || rows[0].Events[0].Type != "bounced" ||
		rows[0].Events[0].Detail != "hard" || rows[0].Events[0].At == "" {
		t.Fatalf("after the bounce: %+v", rows)
	}
	if sup := f.suppressions(); len(sup) != 1 || sup["ada@example.com"] != "hard_bounce" {
		t.Fatalf("suppressions: %v", sup)
	}
	testwait.For(t, "a delivery.bounced webhook", func() bool { return len(f.hooks.ofType("delivery.bounced")) == 1 })
	hook := f.hooks.ofType("delivery.bounced")[0]
	if d, _ := hook["data"].(map[string]any); d["status"] != "bounced" || d["attemptId"] != rows[0].AttemptID {
		t.Fatalf("webhook %v", hook)
	}

	// The provider's retry of the same event changes nothing.
	if status, _ := f.post(path, resendSecret, "msg_bounce", req); status != 202 {
		t.Fatalf("the repeat: %d", status)
	}
	if r := f.rows(runID); len(r[0].Events) != 1 {
		t.Fatalf("the repeat added an event: %+v", r)
	}
	// An event of a message Herald did not send is ignored.
	if status, body := f.post(path, resendSecret, "msg_other", testinbound.ResendEvent("email.bounced", "em_999", "Permanent")); status != 202 ||
		strings.Contains(body, "em_999") {
		t.Fatalf("unknown message: %d %s", status, body)
	}

	// The next run's send is skipped; nothing reaches Resend.
	runID2, seen2 := f.run("ada")
	if seen2 != "skipped:suppressed:true" || len(f.api.sent()) != 1 {
		t.Fatalf("the send after the bounce: %v, Resend got %v", seen2, f.api.sent())
	}
	if r := f.rows(runID2); len(r) != 1 || r[0].Status != "skipped" {
		t.Fatalf("%+v", r)
	}

	// A complaint suppresses; an open does not.
	bobRun, _ := f.run("bob")
	cyRun, _ := f.run("cy")
	bobID, cyID := f.rows(bobRun)[0].ProviderMessageID, f.rows(cyRun)[0].ProviderMessageID
	if status, _ := f.post(path, resendSecret, "msg_complaint", testinbound.ResendEvent("email.complained", bobID, "")); status != 200 {
		t.Fatalf("complaint: %d", status)
	}
	if status, _ := f.post(path, resendSecret, "msg_open", testinbound.ResendEvent("email.opened", cyID, "")); status != 200 {
		t.Fatalf("open: %d", status)
	}
	sup := f.suppressions()
	if sup["bob@example.com"] != "complaint" || sup["cy@example.com"] != "" || len(sup) != 2 {
		t.Fatalf("suppressions: %v", sup)
	}
	if r := f.rows(cyRun)[0]; r.Status != "sent" || len(r.Events) != 1 || r.Events[0].Type != "opened" {
		t.Fatalf("an open: %+v", r)
	}
	if r := f.rows(bobRun)[0]; r.Status != "complained" {
		t.Fatalf("a complaint: %+v", r)
	}
	testwait.For(t, "complained and opened webhooks", func() bool {
		return len(f.hooks.ofType("delivery.complained")) == 1 && len(f.hooks.ofType("delivery.opened")) == 1
	})

	// Metrics count the reports per channel and status.
	m := f.h.Do("GET", "/metrics", "", nil)
	for _, line := range []string{`herald_delivery_reports_total{channel="email-resend",status="bounced"} 1`,
		`herald_delivery_reports_total{channel="email-resend",status="complained"} 1`,
		`herald_delivery_reports_total{channel="email-resend",status="opened"} 1`} {
		if !strings.Contains(string(m.Body), line) {
			t.Fatalf("metrics lack %s", line)
		}
	}

	// A rotation retires the URL: the old one is 404, the new one heard.
	f.call("POST", "/v1/channels/email-resend/inbound-token", nil, 200)
	if status, body := f.post(path, resendSecret, "msg_late", testinbound.ResendEvent("email.delivered", cyID, "")); status != 404 ||
		strings.Contains(body, "resend") {
		t.Fatalf("the retired URL: %d %s", status, body)
	}
	if status, _ := f.post(f.inboundPath(), resendSecret, "msg_late", testinbound.ResendEvent("email.delivered", cyID, "")); status != 200 {
		t.Fatalf("the new URL: %d", status)
	}
	// A body over 1 MiB is refused before anything is read into it.
	if status, _ := f.post(f.inboundPath(), resendSecret, "msg_big", `{"x":"`+strings.Repeat("a", 2<<20)+`"}`); status != 413 {
		t.Fatalf("a 2 MiB body: %d", status)
	}
	// herald audit shows the reports, none holding an address; erasing
	// the bounced subscriber keeps its row's events and its suppression.
	audit := f.h.Do("GET", "/v1/admin/events?type=DeliveryReported", f.h.AdminToken(), nil)
	if audit.Status != 200 || strings.Count(string(audit.Body), "\n") != 4 || strings.Contains(string(audit.Body), "example.com") {
		t.Fatalf("audit of the reports: %d %s", audit.Status, audit.Body)
	}
	f.call("DELETE", "/v1/subscribers/ada?erase=true", nil, 204)
	if r := f.rows(runID); r[0].Status != "bounced" || len(r[0].Events) != 1 || r[0].Address != "" {
		t.Fatalf("the bounced row after erasure: %+v", r)
	}
	var supl struct{ Data []map[string]any }
	f.call("GET", "/v1/suppressions", nil, 200).JSON(t, &supl)
	if len(supl.Data) != 2 {
		t.Fatalf("suppressions after erasure: %v", supl.Data)
	}
	// Garbage tokens are a 404 that says nothing.
	if status, _ := f.post("/in/nope", resendSecret, "x", "{}"); status != 404 {
		t.Fatalf("a bad token: %d", status)
	}
}

// texted sends one SMS.
var texted = bridge.MustWorkflow("texted", func(ctx *bridge.Context, _ any) error {
	_, err := bridge.Send(ctx, "sms", "sms", func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Body: "Your code is 1234"}, nil
	})
	return err
})

// TestTwilioStatusCallbackEndToEnd: Twilio signs the URL it calls, query
// included, with the channel's auth token: an SMS sent through a loopback
// Twilio API, then its status callbacks posted to the inboundUrl with a
// query: undelivered is recorded failed (with its error code), a
// callback signed over another URL is 401, a sent callback is 202.
func TestTwilioStatusCallbackEndToEnd(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"}`)
	}))
	t.Cleanup(api.Close)
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic}})
	_, key := h.Tenant("Acme")
	f := &inboundFixture{t: t, h: h, key: key}
	const authToken = "twilio-auth-token-5e1f"
	runID, inboundURL := f.sendOne("sms-twilio", map[string]any{
		"accountSid": "AC123", "authToken": authToken, "from": "+15550100", "apiBaseUrl": api.URL}, "sms", "+14155550123", texted)
	inURL := inboundURL + "?site=eu"
	post := func(signedURL string, status string) int {
		form := url.Values{"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "MessageStatus": {status},
			"ErrorCode": {"30003"}, "AccountSid": {"AC123"}, "To": {"+14155550123"}}
		req, _ := http.NewRequest("POST", h.URL()+strings.TrimPrefix(inURL, inboundPublic), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", testinbound.TwilioSignature(authToken, signedURL, form))
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := post(inboundURL, "undelivered"); st != 401 {
		t.Fatalf("signed without the query: %d", st)
	}
	if st := post(inURL, "sent"); st != 202 {
		t.Fatalf("sent: %d", st)
	}
	if st := post(inURL, "undelivered"); st != 200 {
		t.Fatalf("undelivered: %d", st)
	}
	r := f.rows(runID)
	if len(r) != 1 || r[0].Status != "failed" || len(r[0].Events) != 1 || r[0].Events[0].Detail != "30003" {
		t.Fatalf("row %+v", r)
	}
	if sup := f.suppressions(); len(sup) != 0 {
		t.Fatalf("an undelivered SMS suppressed: %v", sup)
	}
}
