package bridgetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/bridgetest"
	"github.com/heraldhq/herald/bridge/wire"
)

type signup struct {
	Plan string `json:"plan"`
}

// onboarding loads a name, e-mails it, waits a day and nudges; ran counts
// the tenant code that ran.
func onboarding(ran *[]string) *bridge.Workflow {
	return bridge.MustWorkflow("onboarding", func(ctx *bridge.Context, p signup) error {
		name, err := bridge.Run(ctx, "load-user", func(context.Context) (string, error) {
			*ran = append(*ran, "load-user")
			return "Ada", nil
		})
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "send-email", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			*ran = append(*ran, "render")
			return bridge.SendContent{Subject: "Welcome, " + name, Body: "Your " + p.Plan + " plan is ready."}, nil
		})
		if err != nil {
			return err
		}
		if p.Plan == "pro" {
			return nil
		}
		if err := bridge.Delay(ctx, "pause", 24*time.Hour); err != nil {
			return err
		}
		_, err = bridge.Run(ctx, "nudge", func(context.Context) (bool, error) {
			*ran = append(*ran, "nudge")
			return true, nil
		})
		return err
	})
}

func history(payload string, steps ...wire.CompletedStep) *bridgetest.History {
	return &bridgetest.History{WorkflowID: "onboarding", RunID: "run_1", Payload: json.RawMessage(payload), Steps: steps}
}

var (
	loaded = wire.CompletedStep{StepID: "load-user", Type: wire.StepRun, Output: json.RawMessage(`"Grace"`)}
	sent   = wire.CompletedStep{StepID: "send-email", Type: wire.StepSend, Output: json.RawMessage(`{"attemptId":"att_1","status":"sent"}`)}
)

func TestReplayFollowsTheHistory(t *testing.T) {
	var ran []string
	res, err := bridgetest.Replay(onboarding(&ran), history(`{"plan":"free"}`, loaded, sent))
	if err != nil || res != (bridgetest.Result{NextStepID: "pause", NextStepType: "delay"}) {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	res, err = bridgetest.Replay(onboarding(&ran), history(`{"plan":"pro"}`, loaded, sent))
	if err != nil || !res.Completed {
		t.Fatalf("replay of a completed run: %+v, %v", res, err)
	}
	// No step past the history runs, not even the first one.
	res, err = bridgetest.Replay(onboarding(&ran), history(`{}`))
	if err != nil || res.NextStepID != "load-user" || res.NextStepType != "run" {
		t.Fatalf("replay of an empty history: %+v, %v", res, err)
	}
	if len(ran) != 0 {
		t.Fatalf("tenant code ran during replays: %v", ran)
	}
}

func TestReplayReportsNondeterminism(t *testing.T) {
	var ran []string
	wf := onboarding(&ran)
	for _, tt := range []struct {
		name string
		h    *bridgetest.History
		want string
	}{
		{"reordered", history(`{}`, sent, loaded),
			`nondeterministic workflow: step 1 was "send-email" (send) in the history, the code asked for "load-user" (run)`},
		{"retyped", history(`{}`, loaded, wire.CompletedStep{StepID: "send-email", Type: wire.StepRun}),
			`nondeterministic workflow: step 2 was "send-email" (run) in the history, the code asked for "send-email" (send)`},
		{"removed", history(`{"plan":"pro"}`, loaded, sent, wire.CompletedStep{StepID: "pause", Type: wire.StepDelay}),
			`nondeterministic workflow: step 3 was "pause" (delay) in the history, the code returned without asking for it`},
		{"output of another type", history(`{}`, wire.CompletedStep{StepID: "load-user", Type: wire.StepRun, Output: json.RawMessage(`{"first":"Ada"}`)}),
			`nondeterministic workflow: step 1 "load-user" (run) recorded an output that does not decode as string`},
	} {
		_, err := bridgetest.Replay(wf, tt.h)
		if !errors.Is(err, bridge.ErrNondeterministic) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant %s", tt.name, err, tt.want)
		}
	}
	if len(ran) != 0 {
		t.Fatalf("tenant code ran during replays: %v", ran)
	}
}

func TestReplayReportsOtherFailures(t *testing.T) {
	var ran []string
	if _, err := bridgetest.Replay(onboarding(&ran), history(`{"plan":7}`)); err == nil || !strings.Contains(err.Error(), "payload does not decode") {
		t.Errorf("payload of another type: %v", err)
	}
	other := history(`{}`)
	other.WorkflowID = "welcome"
	if _, err := bridgetest.Replay(onboarding(&ran), other); err == nil || !strings.Contains(err.Error(), `"welcome"`) {
		t.Errorf("history of another workflow: %v", err)
	}
	boom := errors.New("boom")
	failing := bridge.MustWorkflow("onboarding", func(*bridge.Context, struct{}) error { return boom })
	if _, err := bridgetest.Replay(failing, history(`{}`)); !errors.Is(err, boom) {
		t.Errorf("workflow error: %v", err)
	}
}

// A Workflow not built by NewWorkflow (its zero value) has nothing to
// replay: Replay says so instead of panicking.
func TestReplayOfAZeroWorkflowIsAnError(t *testing.T) {
	_, err := bridgetest.Replay(&bridge.Workflow{}, &bridgetest.History{Payload: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "bridge.NewWorkflow") {
		t.Errorf("zero workflow: %v", err)
	}
}

func TestLoadHistory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	h, err := bridgetest.LoadHistory(write("run.json", `{"action":"execute","workflowId":"onboarding","runId":"run_1",
		"payload":{"plan":"pro"},"subscriber":{"subscriberId":"u1"},"steps":[{"stepId":"load-user","type":"run","output":"Grace"}]}`))
	if err != nil || h.WorkflowID != "onboarding" || h.Subscriber.SubscriberID != "u1" || len(h.Steps) != 1 {
		t.Fatalf("load: %+v, %v", h, err)
	}
	if h, err := bridgetest.LoadHistory(write("bare.json", `{"workflowId":"onboarding","steps":[]}`)); err != nil || h.WorkflowID != "onboarding" {
		t.Fatalf("load without action: %+v, %v", h, err)
	}
	for name, body := range map[string]string{"discover.json": `{"action":"discover"}`, "broken.json": `{"action":`, "empty.json": `{}`} {
		if _, err := bridgetest.LoadHistory(write(name, body)); err == nil {
			t.Errorf("%s loaded", name)
		}
	}
	if _, err := bridgetest.LoadHistory(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
}

// A throttle step replays its recorded count: the workflow branches on it,
// and a recorded step of another type is non-determinism.
func TestReplayThrottle(t *testing.T) {
	wf := bridge.MustWorkflow("onboarding", func(ctx *bridge.Context, _ signup) error {
		th, err := bridge.Throttle(ctx, "limit", 3, time.Hour, bridge.ThrottleKey("k"))
		if err != nil || th.Throttled {
			return err
		}
		_, err = bridge.Send(ctx, "send-email", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "s", Body: "b"}, nil
		})
		return err
	})
	counted := func(out string) wire.CompletedStep {
		return wire.CompletedStep{StepID: "limit", Type: wire.StepThrottle, Output: json.RawMessage(out)}
	}
	res, err := bridgetest.Replay(wf, history(`{}`))
	if err != nil || res.NextStepID != "limit" || res.NextStepType != "throttle" {
		t.Fatalf("replay of an empty history: %+v, %v", res, err)
	}
	res, err = bridgetest.Replay(wf, history(`{}`, counted(`{"throttled":false,"count":3}`)))
	if err != nil || res.NextStepID != "send-email" {
		t.Fatalf("replay under the limit: %+v, %v", res, err)
	}
	res, err = bridgetest.Replay(wf, history(`{}`, counted(`{"throttled":true,"count":4}`)))
	if err != nil || !res.Completed {
		t.Fatalf("replay over the limit: %+v, %v", res, err)
	}
	_, err = bridgetest.Replay(wf, history(`{}`, wire.CompletedStep{StepID: "limit", Type: wire.StepRun, Output: json.RawMessage(`1`)}))
	if !errors.Is(err, bridge.ErrNondeterministic) {
		t.Fatalf("replay of a run step in the throttle's place: %v", err)
	}
}
