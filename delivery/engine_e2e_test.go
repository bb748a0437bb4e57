package delivery_test

import (
	"context"
	"net/http"
	"testing"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// welcome is a workflow of one send step to the run's subscriber.
var welcome = bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
	_, err := bridge.Send(ctx, "greet", "email", func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Welcome", Body: "Hello from the engine"}, nil
	})
	return err
})

// runWelcome triggers welcome for ada through the tenant's Bridge and
// waits for the run to finish.
func runWelcome(t *testing.T, f *fixture) map[string]any {
	t.Helper()
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(welcome))
	r := f.tenantCall("POST", "/v1/events", map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "ada"}}, http.StatusAccepted)
	var tr struct {
		Runs []struct{ RunID string }
	}
	r.JSON(t, &tr)
	if len(tr.Runs) != 1 {
		t.Fatalf("trigger: %s", r.Body)
	}
	return f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed")
}

// TestEngineSendStepThroughDelivery: the engine's send step goes through
// the real POST /v1/deliver to a loopback SMTP server; a 451 is retried by
// the engine and the message arrives once.
func TestEngineSendStepThroughDelivery(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{Security: testsmtp.StartTLS, OnData: func(n int, _ *gosmtp.Conn) error {
		if n == 1 {
			return testsmtp.Reply(451, gosmtp.EnhancedCode{4, 3, 0}, "try again later")
		}
		return nil
	}})
	f := newFixture(t, m, false, nil)
	run := runWelcome(t, f)
	if run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	step := run["steps"].([]any)[0].(map[string]any)
	out, _ := step["output"].(map[string]any)
	if step["attempts"] != float64(2) || out["status"] != "sent" || out["attemptId"] == nil || out["providerMessageId"] == nil {
		t.Fatalf("send step %v", step)
	}
	got := m.Messages()
	if len(got) != 1 || got[0].To[0] != adaFirst || !got[0].TLS {
		t.Fatalf("received %+v", got)
	}
	if mid := parseMail(t, got[0]).header.Get("Message-ID"); mid != "<"+out["providerMessageId"].(string)+">" {
		t.Errorf("Message-ID %q, step output %v", mid, out)
	}
	runID := run["runId"].(string)
	rows := f.deliveries(runID)
	if len(rows) != 2 || rows[0].Status != "failed" || rows[1].Status != "sent" ||
		rows[1].IdempotencyKey != runID+":greet" || rows[1].AttemptID != out["attemptId"] {
		t.Fatalf("deliveries %+v", rows)
	}
}

// TestEngineSendStepRejected: a 550 ends the run failed with
// provider_rejected after one attempt.
func TestEngineSendStepRejected(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{OnRcpt: func(string) error {
		return testsmtp.Reply(550, gosmtp.EnhancedCode{5, 1, 1}, "no such user")
	}})
	f := newFixture(t, m, false, nil)
	run := runWelcome(t, f)
	errBody, _ := run["error"].(map[string]any)
	step := run["steps"].([]any)[0].(map[string]any)
	if run["status"] != "failed" || errBody["code"] != "provider_rejected" || step["attempts"] != float64(1) {
		t.Fatalf("run %v", run)
	}
	if m.Accepted() != 0 {
		t.Fatal("a message was kept")
	}
}

// TestEngineSendStepTerminalCodes: the engine's send steps reach the
// delivery service in-process; a subscriber without an address is a
// skipped send (the run completes); no channel ends the run at once with
// the code POST /v1/deliver answers.
func TestEngineSendStepTerminalCodes(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.tenantCall("PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{"email": nil}}, http.StatusOK)
	run := runWelcome(t, f)
	step := run["steps"].([]any)[0].(map[string]any)
	if out, _ := step["output"].(map[string]any); run["status"] != "completed" || out["status"] != "skipped" || out["reason"] != "no_address" {
		t.Fatalf("a subscriber without an address: run %v", run)
	}
	f.tenantCall("DELETE", "/v1/channels/email-smtp", nil, http.StatusNoContent)
	run = runWelcome(t, f)
	if errBody, _ := run["error"].(map[string]any); run["status"] != "failed" || errBody["code"] != "no_channel" {
		t.Fatalf("no channel: run %v", run)
	}
	if m.Accepted() != 0 {
		t.Fatal("a message was sent")
	}
}
