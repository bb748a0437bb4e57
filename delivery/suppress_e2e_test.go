package delivery_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// noted is welcome followed by a step that records what the SDK made of
// the send's result: "sent", or "skipped:<reason>:<reason is
// bridge.Suppressed>".
var noted = bridge.MustWorkflow("noted", func(ctx *bridge.Context, _ any) error {
	res, err := bridge.Send(ctx, "greet", "email", func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Welcome", Body: "Hello from the engine"}, nil
	})
	if err != nil {
		return err
	}
	_, err = bridge.Run(ctx, "seen", func(context.Context) (string, error) {
		if !res.Skipped() {
			return "sent", nil
		}
		if res.Reason == bridge.Suppressed {
			return "skipped:" + string(res.Reason) + ":true", nil
		}
		return "skipped:" + string(res.Reason) + ":false", nil
	})
	return err
})

type suppressionRow struct {
	Kind, Address, Reason, CreatedAt string
}

// suppressions lists GET /v1/suppressions.
func (f *fixture) suppressions() []suppressionRow {
	f.t.Helper()
	var l struct{ Data []suppressionRow }
	f.tenantCall("GET", "/v1/suppressions", nil, http.StatusOK).JSON(f.t, &l)
	return l.Data
}

// TestHardBounceSuppressesTheAddress follows a suppression through its
// whole life, end to end: a real SMTP server on loopback answers RCPT for ada's
// address with 550 5.1.1; the run fails provider_rejected and the address
// is suppressed with reason hard_bounce. The next send to it, through the
// engine and a real Bridge, is skipped with reason suppressed (the SDK
// sees bridge.Suppressed) and reaches no server; once the suppression is
// deleted the message is sent again. A suppression the tenant PUTs in
// another case matches the contact too.
func TestHardBounceSuppressesTheAddress(t *testing.T) {
	var bounce atomic.Bool
	bounce.Store(true)
	var rcpts atomic.Int64
	m := testsmtp.Start(t, testsmtp.Options{OnRcpt: func(to string) error {
		rcpts.Add(1)
		if bounce.Load() && to == adaFirst {
			return testsmtp.Reply(550, gosmtp.EnhancedCode{5, 1, 1}, "no such user here")
		}
		return nil
	}})
	f := newFixture(t, m, false, nil)
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(noted))
	run := func() map[string]any {
		t.Helper()
		r := f.tenantCall("POST", "/v1/events", map[string]any{"workflowId": "noted", "to": map[string]any{"subscriberId": "ada"}}, http.StatusAccepted)
		var tr struct{ Runs []struct{ RunID string } }
		r.JSON(t, &tr)
		if len(tr.Runs) != 1 {
			t.Fatalf("trigger: %s", r.Body)
		}
		return f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed")
	}
	steps := func(run map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, s := range run["steps"].([]any) {
			step := s.(map[string]any)
			out[step["stepId"].(string)] = step
		}
		return out
	}

	// The bounce.
	r1 := run()
	if e, _ := r1["error"].(map[string]any); r1["status"] != "failed" || e["code"] != "provider_rejected" {
		t.Fatalf("the bounced run: %v", r1)
	}
	sup := f.suppressions()
	if len(sup) != 1 || sup[0].Kind != "email" || sup[0].Address != adaFirst || sup[0].Reason != "hard_bounce" || sup[0].CreatedAt == "" {
		t.Fatalf("suppressions after the bounce: %+v", sup)
	}

	// The next send is skipped: nothing reaches the server.
	before := rcpts.Load()
	r2 := run()
	st := steps(r2)
	out, _ := st["greet"]["output"].(map[string]any)
	if r2["status"] != "completed" || out["status"] != "skipped" || out["reason"] != "suppressed" || out["attemptId"] == nil {
		t.Fatalf("the send after the bounce: %v", r2)
	}
	if st["seen"]["output"] != "skipped:suppressed:true" {
		t.Fatalf("the SDK saw %v", st["seen"]["output"])
	}
	if rcpts.Load() != before {
		t.Fatal("a suppressed address reached the SMTP server")
	}
	rows := f.deliveries(r2["runId"].(string))
	if len(rows) != 1 || rows[0].Status != "skipped" || rows[0].Reason != "suppressed" || rows[0].AttemptID != out["attemptId"] {
		t.Fatalf("ledger of the skipped send: %+v", rows)
	}

	// Deleting the suppression sends again.
	bounce.Store(false)
	f.tenantCall("DELETE", "/v1/suppressions/email/"+url.PathEscape(adaFirst), nil, http.StatusNoContent)
	r3 := run()
	if st := steps(r3); r3["status"] != "completed" || st["seen"]["output"] != "sent" {
		t.Fatalf("the send after the suppression was deleted: %v", r3)
	}
	if got := m.Messages(); len(got) != 1 || got[0].To[0] != adaFirst {
		t.Fatalf("received %+v", got)
	}

	// A suppression written in another case names the same contact.
	f.tenantCall("PUT", "/v1/suppressions/email/"+url.PathEscape(strings.ToUpper(adaFirst)), map[string]any{}, http.StatusCreated)
	r4 := run()
	if st := steps(r4); r4["status"] != "completed" || st["seen"]["output"] != "skipped:suppressed:true" {
		t.Fatalf("the send after a manual suppression: %v", r4)
	}
	if sup := f.suppressions(); len(sup) != 1 || sup[0].Reason != "manual" || sup[0].Address != adaFirst {
		t.Fatalf("suppressions: %+v", sup)
	}
	if len(m.Messages()) != 1 {
		t.Fatal("a message reached a suppressed address")
	}
}

// TestBounceWithoutAddressCodeDoesNotSuppress: a 550 to RCPT with no
// enhanced code, or with one about something else than the address
// (5.7.1, a policy refusal), fails the send without suppressing.
func TestBounceWithoutAddressCodeDoesNotSuppress(t *testing.T) {
	var n atomic.Int64
	m := testsmtp.Start(t, testsmtp.Options{OnRcpt: func(string) error {
		if n.Add(1) == 1 {
			return &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.NoEnhancedCode, Message: "go away"}
		}
		return testsmtp.Reply(550, gosmtp.EnhancedCode{5, 7, 1}, "relaying denied")
	}})
	f := newFixture(t, m, false, nil)
	for range 2 {
		if run := runWelcome(t, f); run["status"] != "failed" {
			t.Fatalf("run %v", run)
		}
	}
	if n.Load() != 2 {
		t.Fatalf("%d RCPT commands, want 2", n.Load())
	}
	if sup := f.suppressions(); len(sup) != 0 {
		t.Fatalf("suppressed: %+v", sup)
	}
}
