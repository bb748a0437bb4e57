package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestEveryEventTypeArrivesSigned: an endpoint subscribed to "*" receives
// each of the event types, signed so that an implementation of the
// specification of its own verifies it; the first try of every message is
// answered 500, and the retry carries the same webhook-id. The data is the
// resource exactly as the API shows it.
func TestEveryEventTypeArrivesSigned(t *testing.T) {
	h := startService(t, "", map[string]string{"HERALD_MAX_ATTEMPTS": "1"})
	f := newFixture(t, h, "Acme")
	recv := newReceiver(t, func(_ string, n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	// A message sent before the endpoint exists (its delivery.sent is not
	// the endpoint's), of which the provider reports later.
	reportedAttempt, _ := f.inApp("run_reported")
	hookID, secret := f.webhook(recv.URL, "*")

	// Runs: one completes, one fails (a step failing with no retries
	// left), one is cancelled while it waits.
	wfs := []*bridge.Workflow{
		bridge.MustWorkflow("done", func(*bridge.Context, any) error { return nil }),
		bridge.MustWorkflow("boom", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run(ctx, "explode", func(context.Context) (int, error) { return 0, errors.New("boom") })
			return err
		}),
		bridge.MustWorkflow("waits", func(ctx *bridge.Context, _ any) error {
			_, _, err := bridge.WaitForEvent[any](ctx, "wait", "never", time.Hour)
			return err
		}),
	}
	h.Bridge(f.key, bridge.NewRegistry().MustRegister(wfs...))
	runs := map[string]string{}
	for _, wf := range []string{"done", "boom", "waits"} {
		var tr struct{ Runs []struct{ RunID string } }
		f.call("POST", "/v1/events", map[string]any{"workflowId": wf, "to": map[string]any{"subscriberId": "ada"}}, 202).JSON(t, &tr)
		runs[wf] = tr.Runs[0].RunID
	}
	h.WaitRun(f.key, runs["done"], "completed")
	h.WaitRun(f.key, runs["boom"], "failed")
	h.WaitRun(f.key, runs["waits"], "waiting")
	f.call("POST", "/v1/runs/"+runs["waits"]+"/cancel", map[string]any{}, 202)
	h.WaitRun(f.key, runs["waits"], "cancelled")

	// Deliveries: sent (in-app), skipped (no phone number), failed (a
	// webhook channel whose URL answers 400).
	sentAttempt, msgID := f.inApp("run_sent")
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "sms-twilio", "config": map[string]any{
		"accountSid": "AC123", "authToken": "twilio-token", "from": "+15550100"}}, 201)
	if status, out := f.deliver(map[string]any{"idempotencyKey": "run_skip:sms", "runId": "run_skip", "stepId": "sms",
		"subscriberId": "ada", "channel": "sms", "content": map[string]any{"body": "code"}}); status != 200 || out["status"] != "skipped" {
		t.Fatalf("skip: %d %v", status, out)
	}
	refuser := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(400) }))
	t.Cleanup(refuser.Close)
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "webhook", "config": map[string]any{"url": refuser.URL}}, 201)
	f.deliver(map[string]any{"idempotencyKey": "run_fail:hook", "runId": "run_fail", "stepId": "hook",
		"subscriberId": "ada", "channel": "webhook", "content": map[string]any{"data": map[string]any{"x": 1}}})

	// Inbox marks, as the inbox records them.
	for _, mark := range []string{events.MarkSeen, events.MarkRead, events.MarkArchived} {
		if _, err := h.Log().Append(context.Background(), eventlog.Record{
			Subject: eventlog.Subject(f.tenant, eventlog.AggInbox, "ada"), Type: events.InboxMessagesMarked, Tenant: f.tenant,
			Data: events.InboxMessagesMarkedData{SubscriberID: "ada", Mark: mark, MessageIDs: []string{msgID}},
		}); err != nil {
			t.Fatal(err)
		}
	}

	// Provider reports, as the inbound URL records them.
	for _, st := range []string{events.ReportDelivered, events.ReportBounced, events.ReportComplained,
		events.ReportOpened, events.ReportClicked} {
		if _, err := h.Log().Append(context.Background(), eventlog.Record{
			Subject: eventlog.Subject(f.tenant, eventlog.AggDelivery, events.ReportSubjectID("in-app", "ev-"+st)),
			Type:    events.DeliveryReported, Tenant: f.tenant, Expect: true,
			Data: events.DeliveryReportedData{AttemptID: reportedAttempt, ChannelKey: "in-app", Status: st,
				ProviderEventID: "ev-" + st},
		}); err != nil {
			t.Fatal(err)
		}
	}

	want := events.WebhookTypes
	got := recv.waitFor(t, "every type twice", func(got []received) bool {
		n := map[string]int{}
		for _, r := range got {
			n[r.Type]++
		}
		for _, typ := range want {
			if n[typ] < 2 {
				return false
			}
		}
		return true
	})
	byType := map[string][]received{}
	for _, r := range got {
		if !verifySignature(secret, r.ID, r.Timestamp, r.Body, r.Signature) {
			t.Fatalf("%s %s: the signature %q does not verify", r.Type, r.ID, r.Signature)
		}
		byType[r.Type] = append(byType[r.Type], r)
	}
	for _, typ := range want {
		rs := byType[typ]
		if len(rs) != 2 || rs[0].ID != rs[1].ID || rs[0].Status != 500 || rs[1].Status != 204 {
			t.Fatalf("%s: %d requests, ids %q/%q", typ, len(rs), rs[0].ID, rs[len(rs)-1].ID)
		}
		// data is rendered when sent: a retry shows the same resource as
		// it is then (the message read first may be archived since).
		if !sameEventAndResource(t, rs[0].Body, rs[1].Body) {
			t.Fatalf("%s: the retry is of another event or resource:\n%s\n%s", typ, rs[0].Body, rs[1].Body)
		}
	}
	if len(got) != 2*len(want) {
		t.Fatalf("%d requests, want %d", len(got), 2*len(want))
	}

	// data is what the API shows.
	for typ, wf := range map[string]string{events.HookRunCompleted: "done", events.HookRunFailed: "boom", events.HookRunCancelled: "waits"} {
		api := f.call("GET", "/v1/runs/"+runs[wf], nil, 200).Map(t)
		if d := byType[typ][1].Data; !reflect.DeepEqual(d, api) {
			t.Fatalf("%s data %v\nGET /v1/runs: %v", typ, d, api)
		}
	}
	rows := map[string]map[string]any{}
	var l struct{ Data []map[string]any }
	f.call("GET", "/v1/deliveries", nil, 200).JSON(t, &l)
	for _, row := range l.Data {
		rows[row["attemptId"].(string)] = row
	}
	for _, typ := range []string{events.HookDeliverySent, events.HookDeliveryFailed, events.HookDeliverySkipped} {
		d := byType[typ][1].Data
		if !reflect.DeepEqual(d, rows[d["attemptId"].(string)]) {
			t.Fatalf("%s data %v\nGET /v1/deliveries: %v", typ, d, rows[d["attemptId"].(string)])
		}
	}
	if byType[events.HookDeliverySent][1].Data["attemptId"] != sentAttempt {
		t.Fatalf("delivery.sent data %v", byType[events.HookDeliverySent][1].Data)
	}
	for _, typ := range []string{events.HookInboxRead, events.HookInboxArchived} {
		if d := byType[typ][1].Data; d["messageId"] != msgID || d["body"] != "Hello Ada" || d["runId"] != "run_sent" {
			t.Fatalf("%s data %v", typ, d)
		}
	}

	// The attempts list: one failed and one succeeded attempt of each.
	atts := f.attempts(hookID)
	if len(atts) != 2*len(want) {
		t.Fatalf("%d attempts, want %d: %v", len(atts), 2*len(want), atts)
	}
	for _, a := range atts {
		okRow := (a["status"] == "failed" && a["httpStatus"] == float64(500) && a["attempt"] == float64(1)) ||
			(a["status"] == "succeeded" && a["httpStatus"] == float64(204) && a["attempt"] == float64(2))
		if !okRow || a["webhookId"] != hookID || !slices.Contains(want, a["type"].(string)) || a["createdAt"] == nil {
			t.Fatalf("attempt %v", a)
		}
	}
}

// TestRetriedAfterEachFailure: a receiver answering 500 three times then
// 200 gets the message once more after each failure, with the same
// webhook-id and growing delays; the attempts list shows the four.
func TestRetriedAfterEachFailure(t *testing.T) {
	h := startService(t, "", nil)
	f := newFixture(t, h, "Acme")
	recv := newReceiver(t, func(_ string, n int) int {
		if n <= 3 {
			return 500
		}
		return 200
	})
	hookID, _ := f.webhook(recv.URL, events.HookDeliverySent)
	f.inApp("run_1")
	got := recv.waitFor(t, "four requests", func(got []received) bool { return len(got) >= 4 })
	time.Sleep(time.Second) // no fifth
	if got = recv.requests(); len(got) != 4 {
		t.Fatalf("%d requests, want 4", len(got))
	}
	for i, r := range got {
		if r.ID != got[0].ID || r.Type != events.HookDeliverySent {
			t.Fatalf("request %d: id %s type %s, first id %s", i, r.ID, r.Type, got[0].ID)
		}
	}
	// Backoff from 100ms, doubling: 100, 200, 400ms (± scheduling).
	for i := 1; i < 4; i++ {
		gap, base := got[i].At.Sub(got[i-1].At), 100*time.Millisecond<<(i-1)
		if gap < base-20*time.Millisecond {
			t.Fatalf("retry %d came %v after the previous, want ≥ %v", i, gap, base)
		}
	}
	var atts []map[string]any
	testwait.Until(t, "4 attempts", func() error {
		if atts = f.attempts(hookID); len(atts) != 4 {
			return fmt.Errorf("attempts %v", atts)
		}
		return nil
	})
	for i, a := range atts {
		status, code := "failed", float64(500)
		if i == 3 {
			status, code = "succeeded", 200
		}
		if a["eventId"] != got[0].ID || a["status"] != status || a["httpStatus"] != code || a["attempt"] != float64(i+1) ||
			a["type"] != events.HookDeliverySent || a["webhookId"] != hookID {
			t.Fatalf("attempt %d: %v", i, a)
		}
	}
}

// TestDeliveredAfterRestart: messages whose receiver is down while the
// service stops and starts again all arrive once the receiver is back.
func TestDeliveredAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h := startService(t, dir, nil)
	f := newFixture(t, h, "Acme")
	const n = 10
	recv, hookID, secret := f.sendToDownReceiver(n)
	// Wait until each message failed once (the receiver is down).
	testwait.Until(t, "every message attempted", func() error {
		failed := map[string]bool{}
		for _, a := range f.attempts(hookID) {
			failed[a["eventId"].(string)] = true
		}
		if len(failed) != n {
			return fmt.Errorf("%d of %d messages attempted", len(failed), n)
		}
		return nil
	})
	gauge := `herald_webhook_oldest_undelivered_seconds{tenant="` + f.tenant + `",webhook="` + hookID + `"}`
	if m := h.Do("GET", "/metrics", "", nil); !strings.Contains(string(m.Body), gauge) {
		t.Fatalf("metrics lack %s while its messages fail", gauge)
	}
	h.Stop()
	h = startService(t, dir, nil)
	f.h, f.base, f.internal = h, h.URL(), h.InternalToken()
	recv.restart(t)
	recv.waitForEverySigned(t, n, secret)
	// Every message delivered: the endpoint has no backlog left.
	testwait.For(t, "metrics without "+gauge, func() bool {
		return !strings.Contains(string(h.Do("GET", "/metrics", "", nil).Body), gauge)
	})
}

// sameEventAndResource reports whether two webhook bodies carry the same
// event (type, timestamp) about the same resource (its ids).
func sameEventAndResource(t *testing.T, a, b []byte) bool {
	t.Helper()
	type body struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	var x, y body
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	if x.Type != y.Type || x.Timestamp != y.Timestamp || len(x.Data) == 0 {
		return false
	}
	for _, id := range []string{"runId", "attemptId", "messageId"} {
		if x.Data[id] != y.Data[id] {
			return false
		}
	}
	return true
}
