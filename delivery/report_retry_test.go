package delivery_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testinbound"
)

// TestReportRecordedBeforeAStopStillSuppresses: a process that recorded
// a hard bounce and stopped before suppressing its address answered the
// provider nothing, so the provider sends the event again. The retry
// finds the report recorded and suppresses the address; once the tenant
// removes that suppression, a further retry leaves the address alone.
func TestReportRecordedBeforeAStopStillSuppresses(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic}})
	tenant, key := h.Tenant("Acme")
	f := &inboundFixture{t: t, h: h, key: key, api: startResendAPI(t)}
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "email-resend", "config": map[string]any{
		"apiKey": "re_test_key", "fromEmail": "noreply@herald.test", "webhookSecret": resendSecret,
		"apiBaseUrl": f.api.srv.URL}}, 201)
	f.call("PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}}, 201)
	h.Bridge(key, bridge.NewRegistry().MustRegister(noted))
	runID, _ := f.run("ada")
	row := f.rows(runID)[0]

	// What the stopped process had recorded: the report, and nothing of
	// the suppression it was about to add.
	if _, err := h.Log().Append(context.Background(), eventlog.Record{
		Subject: eventlog.Subject(tenant, eventlog.AggDelivery, events.ReportSubjectID("email-resend", "msg_bounce")),
		Type:    events.DeliveryReported, Tenant: tenant, Expect: true,
		Data: events.DeliveryReportedData{AttemptID: row.AttemptID, ChannelKey: "email-resend",
			Status: events.ReportBounced, Bounce: events.BounceHard, ProviderEventID: "msg_bounce"}}); err != nil {
		t.Fatal(err)
	}
	if sup := f.suppressions(); len(sup) != 0 {
		t.Fatalf("suppressed before the retry: %v", sup)
	}

	path := f.inboundPath()
	req := testinbound.ResendEvent("email.bounced", row.ProviderMessageID, "Permanent")
	if status, _ := f.post(path, resendSecret, "msg_bounce", req); status != 202 {
		t.Fatalf("the retry: %d", status)
	}
	if sup := f.suppressions(); len(sup) != 1 || sup["ada@example.com"] != "hard_bounce" {
		t.Fatalf("after the retry: %v", sup)
	}
	if r := f.rows(runID)[0]; len(r.Events) != 1 {
		t.Fatalf("the retry recorded the report again: %+v", r)
	}

	f.call("DELETE", "/v1/suppressions/email/ada@example.com", nil, 204)
	if status, _ := f.post(path, resendSecret, "msg_bounce", req); status != 202 {
		t.Fatalf("a later retry: %d", status)
	}
	if sup := f.suppressions(); len(sup) != 0 {
		t.Fatalf("a later retry undid the tenant's removal: %v", sup)
	}
}

// TestInboundURLsAreLimitedPerChannel: past HERALD_INBOUND_RATE (here
// one request per 100 s, a burst of one) a channel's inbound URL answers
// 429 with Retry-After and reads nothing, while another channel's URL is
// still heard.
func TestInboundURLsAreLimitedPerChannel(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": inboundPublic,
		"HERALD_INBOUND_RATE": "0.01"}})
	_, key := h.Tenant("Acme")
	f := &inboundFixture{t: t, h: h, key: key, api: startResendAPI(t)}
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "email-resend", "config": map[string]any{
		"apiKey": "re_test_key", "fromEmail": "noreply@herald.test", "webhookSecret": resendSecret,
		"apiBaseUrl": f.api.srv.URL}}, 201)
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "email-postmark", "config": map[string]any{
		"serverToken": "pm-token", "fromEmail": "noreply@herald.test", "apiBaseUrl": f.api.srv.URL}}, 201)
	resend := f.inboundPath()
	var postmark string
	var chs []struct{ ChannelKey, InboundURL string }
	f.call("GET", "/v1/channels", nil, 200).JSON(t, &chs)
	for _, c := range chs {
		if c.ChannelKey == "email-postmark" {
			postmark = strings.TrimPrefix(c.InboundURL, inboundPublic)
		}
	}
	body := testinbound.ResendEvent("email.delivered", "em_1", "")
	if status, _ := f.post(resend, resendSecret, "msg_1", body); status != 202 {
		t.Fatalf("the first request: %d", status)
	}
	req, _ := http.NewRequest("POST", h.URL()+resend, strings.NewReader(body))
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the second request: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if postmark == "" {
		t.Fatal("no inbound URL for email-postmark")
	}
	if status, _ := f.post(postmark, resendSecret, "msg_2", `{"RecordType":"Delivery"}`); status == 429 {
		t.Fatal("another channel's URL was limited too")
	}
}
