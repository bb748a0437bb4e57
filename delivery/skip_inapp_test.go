package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// TestRunGoesOnAfterASkippedSend: a run whose subscriber has no phone
// number: its sms step is skipped with reason no_address, the next step
// (an email) runs, the run completes.
func TestRunGoesOnAfterASkippedSend(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.tenantCall("PUT", "/v1/subscribers/noPhone", map[string]any{"contacts": map[string]any{"email": []string{"np@example.com"}}}, 201)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "sms-twilio", "config": map[string]any{
		"accountSid": "AC123", "authToken": "twilio-token", "from": "+15550100"}}, 201)
	wf := bridge.MustWorkflow("textThenMail", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Send(ctx, "text", "sms", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Body: "Your code is 1234"}, nil
		}); err != nil {
			return err
		}
		_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Code", Body: "Your code is 1234"}, nil
		})
		return err
	})
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(wf))
	r := f.tenantCall("POST", "/v1/events", map[string]any{"workflowId": "textThenMail", "to": map[string]any{"subscriberId": "noPhone"}}, http.StatusAccepted)
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(t, &tr)
	run := f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	steps := run["steps"].([]any)
	text := steps[0].(map[string]any)
	out, _ := text["output"].(map[string]any)
	if len(steps) != 2 || text["status"] != "completed" || len(out) != 3 || out["status"] != "skipped" ||
		out["reason"] != "no_address" || out["attemptId"] == nil {
		t.Fatalf("sms step %v", text)
	}
	if mail := steps[1].(map[string]any)["output"].(map[string]any); mail["status"] != "sent" {
		t.Fatalf("email step %v", steps[1])
	}
	if got := m.Messages(); len(got) != 1 || got[0].To[0] != "np@example.com" {
		t.Fatalf("received %+v", got)
	}
	rows := f.deliveries(tr.Runs[0].RunID)
	if len(rows) != 2 || rows[0].Status != "skipped" || rows[0].Reason != "no_address" || rows[0].Kind != "sms" ||
		rows[0].ChannelKey != "sms-twilio" || rows[0].AttemptID != out["attemptId"] || rows[1].Status != "sent" {
		t.Fatalf("deliveries %+v", rows)
	}
}

// TestInAppSend: a send on the in-app channel stores the message as an
// event on the recipient's inbox subject and is listed by GET
// /v1/deliveries; a repeat stores nothing more.
func TestInAppSend(t *testing.T) {
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "in-app", "config": map[string]any{}}, 201)
	body := sendStep("run_ia", "inbox")
	body["channel"] = "in_app"
	body["content"] = map[string]any{"subject": "New comment", "body": "Bob replied",
		"primaryAction": map[string]any{"label": "Open", "url": "https://app.example.com/c/1"}}
	res := f.mustSend(body)
	if again := f.mustSend(body); again != res {
		t.Fatalf("repeat %+v, first %+v", again, res)
	}
	rows := f.deliveries("run_ia")
	if len(rows) != 1 || rows[0].ChannelKey != "in-app" || rows[0].Kind != "in_app" || rows[0].Status != "sent" ||
		rows[0].Address != "ada" || rows[0].ProviderMessageID == nil || *rows[0].ProviderMessageID != res.ProviderMessageID {
		t.Fatalf("deliveries %+v", rows)
	}
	evs, err := f.h.Log().History(context.Background(), eventlog.Subject(f.tenant, eventlog.AggInbox, "ada"), 0)
	if err != nil || len(evs) != 1 || evs[0].Type != events.InAppMessageStored {
		t.Fatalf("inbox events %+v, %v", evs, err)
	}
	var d events.InAppMessageStoredData
	if err := evs[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	var content map[string]any
	json.Unmarshal(d.Content, &content)
	if d.MessageID != res.ProviderMessageID || d.SubscriberID != "ada" || d.RunID != "run_ia" || d.StepID != "inbox" ||
		content["body"] != "Bob replied" || content["primaryAction"].(map[string]any)["label"] != "Open" {
		t.Fatalf("stored %+v (content %s)", d, d.Content)
	}
	// Missing required content is invalid_content, before anything is recorded.
	bad := sendStep("run_ia", "bad")
	bad["channel"] = "in_app"
	bad["content"] = map[string]any{"subject": "no body"}
	expectError(t, f.deliver(bad), http.StatusUnprocessableEntity, "invalid_content")
	if rows := f.deliveries("run_ia"); len(rows) != 1 {
		t.Fatalf("invalid content recorded %+v", rows)
	}
	// An action that is not an http(s) link is refused the same way, and
	// nothing reaches the inbox to be served.
	for i, u := range []string{"javascript:alert(document.cookie)", "JavaScript:alert(1)", "data:text/html,<script>x</script>", "/relative"} {
		bad := sendStep("run_ia", fmt.Sprintf("js%d", i))
		bad["channel"] = "in_app"
		bad["content"] = map[string]any{"body": "b", "primaryAction": map[string]any{"label": "Open", "url": u}}
		expectError(t, f.deliver(bad), http.StatusUnprocessableEntity, "invalid_content")
	}
	if rows := f.deliveries("run_ia"); len(rows) != 1 {
		t.Fatalf("invalid action recorded %+v", rows)
	}
	if evs, err := f.h.Log().History(context.Background(), eventlog.Subject(f.tenant, eventlog.AggInbox, "ada"), 0); err != nil || len(evs) != 1 {
		t.Fatalf("inbox events after refused actions: %d, %v", len(evs), err)
	}
}

// TestWebhookSendNeedsNoSubscriber: a webhook goes to the channel's URL,
// so a send of a run without a subscriber (a cron tick) is delivered, and
// the body names no subscriber; any other kind still needs one.
func TestWebhookSendNeedsNoSubscriber(t *testing.T) {
	bodies := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "webhook", "config": map[string]any{"url": srv.URL + "/hook"}}, 201)
	body := sendStep("run_tick", "notify")
	delete(body, "subscriberId")
	body["channel"] = "webhook"
	body["content"] = map[string]any{"data": map[string]any{"orderId": 42}}
	if res := f.mustSend(body); res.Status != "sent" {
		t.Fatalf("result %+v", res)
	}
	var posted map[string]any
	if err := json.Unmarshal(<-bodies, &posted); err != nil {
		t.Fatal(err)
	}
	if posted["type"] != "message" || posted["runId"] != "run_tick" || posted["subscriberId"] != "" ||
		posted["data"].(map[string]any)["orderId"] != float64(42) {
		t.Fatalf("posted %v", posted)
	}
	mail := sendStep("run_tick", "mail")
	delete(mail, "subscriberId")
	expectError(t, f.deliver(mail), http.StatusUnprocessableEntity, "validation_failed")
}
