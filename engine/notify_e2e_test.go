package engine_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/heraldhq/herald/bridge"
)

// A Notify step reaches delivery on the channel its content's type names,
// with its content; a send delivery skipped completes its step, which the
// workflow reads with Skipped, and the run goes on.
func TestNotifySkippedSendE2E(t *testing.T) {
	t.Parallel()
	wf := bridge.MustWorkflow("shipped", func(ctx *bridge.Context, _ any) error {
		res, err := bridge.Notify(ctx, "sms", func(context.Context) (bridge.SMSContent, error) {
			return bridge.SMSContent{Body: "On its way"}, nil
		})
		if err != nil || !res.Skipped() {
			return err
		}
		_, err = bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
			return bridge.EmailContent{Subject: "Shipped", Body: "On its way"}, nil
		})
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	f.delivery.Answer = func(req map[string]any) (int, any) {
		key, _ := req["idempotencyKey"].(string)
		if req["channel"] == "sms" {
			return http.StatusOK, map[string]string{"attemptId": "att_" + key, "status": "skipped", "reason": "no_address"}
		}
		return http.StatusOK, map[string]string{"attemptId": "att_" + key, "status": "sent", "providerMessageId": "m1"}
	}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "shipped", "to": map[string]any{"subscriberId": "u1"}}))
	run := f.h.WaitRun(f.key, runID, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("run: %v", run)
	}
	steps := run["steps"].([]any)
	if len(steps) != 2 || steps[0].(map[string]any)["output"].(map[string]any)["status"] != "skipped" {
		t.Fatalf("steps %v", steps)
	}
	reqs := f.delivery.Requests()
	if len(reqs) != 2 || reqs[0]["channel"] != "sms" || reqs[0]["content"].(map[string]any)["body"] != "On its way" ||
		reqs[1]["channel"] != "email" || reqs[1]["content"].(map[string]any)["subject"] != "Shipped" {
		t.Fatalf("delivery requests %v", reqs)
	}
}
