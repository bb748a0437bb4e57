package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// counter counts callback executions by name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
	return c.n[k]
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

type fixture struct {
	h        *testherald.Herald
	key      string
	delivery *testherald.StandInDelivery
}

func start(t *testing.T, reg *bridge.Registry) *fixture {
	t.Helper()
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL})
	_, key := h.Tenant("Acme")
	h.Bridge(key, reg)
	return &fixture{h: h, key: key, delivery: d}
}

// trigger fires a trigger and returns its runs.
func (f *fixture) trigger(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	r := f.h.Do("POST", "/v1/events", f.key, body)
	if r.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	var res struct {
		TransactionID string
		Runs          []map[string]any
	}
	r.JSON(t, &res)
	if res.TransactionID == "" {
		t.Fatalf("no transactionId: %s", r.Body)
	}
	return res.Runs
}

func one(t *testing.T, runs []map[string]any) string {
	t.Helper()
	if len(runs) != 1 || runs[0]["status"] != "dispatched" {
		t.Fatalf("runs %v", runs)
	}
	return runs[0]["runId"].(string)
}

// waitingFor is workflow id whose one step waits an hour for event: its
// runs stay waiting for as long as a test needs.
func waitingFor(id, event string) *bridge.Workflow {
	return bridge.MustWorkflow(id, func(ctx *bridge.Context, _ any) error {
		_, _, err := bridge.WaitForEvent[any](ctx, "wait", event, time.Hour)
		return err
	})
}

// startWaiting starts a fixture serving waitingFor(id, event), triggers
// id for u1 and returns the fixture and the run once it is waiting.
func startWaiting(t *testing.T, id, event string) (*fixture, string) {
	t.Helper()
	f := start(t, bridge.NewRegistry().MustRegister(waitingFor(id, event)))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": id, "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, "waiting")
	return f, runID
}

func TestThreeStepWorkflowRunsEachCallbackOnce(t *testing.T) {
	t.Parallel()
	var calls counter
	wf := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
		name, err := bridge.Run(ctx, "fetch", func(context.Context) (string, error) {
			calls.inc("fetch")
			return "Ada", nil
		})
		if err != nil {
			return err
		}
		greeting, err := bridge.Run(ctx, "compose", func(context.Context) (string, error) {
			calls.inc("compose")
			return "Hello " + name, nil
		})
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			calls.inc("render")
			return bridge.SendContent{Subject: greeting, Body: "Welcome, " + name}, nil
		})
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "u1"},
		"payload": map[string]any{"plan": "pro"}}))
	run := f.h.WaitRun(f.key, runID, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("run: %v", run)
	}
	if calls.get("fetch") != 1 || calls.get("compose") != 1 || calls.get("render") != 1 {
		t.Fatalf("callbacks ran %v", calls.n)
	}
	steps := run["steps"].([]any)
	if len(steps) != 3 {
		t.Fatalf("steps %v", steps)
	}
	send := steps[2].(map[string]any)
	out := send["output"].(map[string]any)
	if send["stepId"] != "email" || send["status"] != "completed" || out["status"] != "sent" || out["attemptId"] != "att_"+runID+":email" {
		t.Fatalf("send step %v", send)
	}
	reqs := f.delivery.Requests()
	if len(reqs) != 1 || reqs[0]["idempotencyKey"] != runID+":email" || reqs[0]["subscriberId"] != "u1" ||
		reqs[0]["channel"] != "email" || reqs[0]["content"].(map[string]any)["subject"] != "Hello Ada" {
		t.Fatalf("delivery requests %v", reqs)
	}
	// The run is listed under its transaction, and the ingress row is dispatched.
	r := f.h.Do("GET", "/v1/notifications?transactionId="+run["transactionId"].(string), f.key, nil)
	var rows struct{ Data []map[string]any }
	r.JSON(t, &rows)
	if len(rows.Data) != 1 || rows.Data[0]["status"] != "dispatched" || rows.Data[0]["runId"] != runID {
		t.Fatalf("notifications %s", r.Body)
	}
}

func TestFailingCallbackIsRetriedThenCompletes(t *testing.T) {
	t.Parallel()
	var calls counter
	wf := bridge.MustWorkflow("flaky", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "call", func(context.Context) (int, error) {
			if n := calls.inc("call"); n <= 2 {
				return 0, fmt.Errorf("upstream down (%d)", n)
			}
			return 42, nil
		})
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "flaky", "to": map[string]any{"subscriberId": "u1"}}))
	run := f.h.WaitRun(f.key, runID, "completed", "failed")
	step := run["steps"].([]any)[0].(map[string]any)
	if run["status"] != "completed" || step["attempts"] != float64(3) || step["output"] != float64(42) || calls.get("call") != 3 {
		t.Fatalf("run %v, calls %d", run, calls.get("call"))
	}
}

func TestAttemptsExhaustedFailsTheRun(t *testing.T) {
	t.Parallel()
	wf := bridge.MustWorkflow("broken", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "call", func(context.Context) (int, error) { return 0, errors.New("always") })
		return err
	})
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL, Env: map[string]string{"HERALD_MAX_ATTEMPTS": "3", "HERALD_RETRY_BASE": "10ms"}})
	_, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	f := &fixture{h: h, key: key}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "broken", "to": map[string]any{"subscriberId": "u1"}}))
	run := h.WaitRun(key, runID, "failed", "completed")
	runErr := run["error"].(map[string]any)
	step := run["steps"].([]any)[0].(map[string]any)
	if run["status"] != "failed" || runErr["code"] != "attempts_exhausted" || step["attempts"] != float64(3) || step["status"] != "failed" {
		t.Fatalf("run %v", run)
	}
}

func TestUnknownWorkflowFailsTerminally(t *testing.T) {
	t.Parallel()
	f := start(t, bridge.NewRegistry().MustRegister(bridge.MustWorkflow("known", func(*bridge.Context, any) error { return nil })))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "unknown", "to": map[string]any{"subscriberId": "u1"}}))
	run := f.h.WaitRun(f.key, runID, "failed", "completed")
	if run["error"].(map[string]any)["code"] != "workflow_not_found" {
		t.Fatalf("run %v", run)
	}
}

func TestTerminalDeliveryFailureFailsTheRun(t *testing.T) {
	t.Parallel()
	wf := bridge.MustWorkflow("notify", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) { return bridge.SendContent{Body: "x"}, nil })
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	var transient atomic.Int32
	f.delivery.Answer = func(map[string]any) (int, any) {
		if transient.Add(1) == 1 {
			return http.StatusBadGateway, map[string]any{"error": map[string]string{"code": "provider_unavailable", "message": "451"}}
		}
		return http.StatusUnprocessableEntity, map[string]any{"error": map[string]string{"code": "no_address", "message": "no email address"}}
	}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "notify", "to": map[string]any{"subscriberId": "u1"}}))
	run := f.h.WaitRun(f.key, runID, "failed", "completed")
	step := run["steps"].([]any)[0].(map[string]any)
	if run["error"].(map[string]any)["code"] != "no_address" || step["attempts"] != float64(2) {
		t.Fatalf("run %v", run)
	}
}

func TestTopicTriggerStartsOneRunPerDistinctSubscriber(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	wf := bridge.MustWorkflow("news", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "note", func(context.Context) (bool, error) {
			mu.Lock()
			seen[ctx.Subscriber.SubscriberID]++
			mu.Unlock()
			return true, nil
		})
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	members := map[string][]string{"a": {"u1", "u2", "u3"}, "b": {"u2", "u3", "u4"}, "c": {"u3", "u5"}}
	for topic, subs := range members {
		for _, s := range subs {
			if r := f.h.Do("PUT", "/v1/subscribers/"+s, f.key, map[string]any{}); r.Status >= 300 {
				t.Fatalf("subscriber: %d %s", r.Status, r.Body)
			}
			if r := f.h.Do("PUT", "/v1/subscribers/"+s+"/subscriptions/"+topic, f.key, nil); r.Status >= 300 {
				t.Fatalf("subscribe: %d %s", r.Status, r.Body)
			}
		}
	}
	runs := f.trigger(t, map[string]any{"workflowId": "news", "to": map[string]any{"topics": []string{"a", "b", "c", "nobody"}}})
	if len(runs) != 5 {
		t.Fatalf("runs %v", runs)
	}
	for _, r := range runs {
		f.h.WaitRun(f.key, r["runId"].(string), "completed")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range []string{"u1", "u2", "u3", "u4", "u5"} {
		if seen[s] != 1 {
			t.Fatalf("subscriber %s ran %d times (%v)", s, seen[s], seen)
		}
	}
}

func TestDelayResumesAfterTheDelay(t *testing.T) {
	t.Parallel()
	var resumed atomic.Int64
	wf := bridge.MustWorkflow("pause", func(ctx *bridge.Context, _ any) error {
		if err := bridge.Delay(ctx, "wait", 2*time.Second); err != nil {
			return err
		}
		_, err := bridge.Run(ctx, "after", func(context.Context) (bool, error) {
			resumed.Store(time.Now().UnixNano())
			return true, nil
		})
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	began := time.Now()
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "pause", "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, "sleeping")
	run := f.h.WaitRun(f.key, runID, "completed")
	if el := time.Duration(resumed.Load() - began.UnixNano()); el < 2*time.Second {
		t.Fatalf("resumed after %v", el)
	}
	if s := run["steps"].([]any)[0].(map[string]any); s["type"] != "delay" || s["status"] != "completed" {
		t.Fatalf("delay step %v", s)
	}
}

func approvalWorkflow(timeout time.Duration, got chan<- json.RawMessage) *bridge.Workflow {
	return bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ any) error {
		v, _, err := bridge.WaitForEvent[json.RawMessage](ctx, "decision", "approved", timeout)
		if err != nil {
			return err
		}
		_, err = bridge.Run(ctx, "record", func(context.Context) (bool, error) {
			got <- v
			return true, nil
		})
		return err
	})
}

// resumedWith returns what the approval workflow's wait resumed with,
// failing with what when nothing came within within (a guard against a
// hang).
func resumedWith(t *testing.T, got <-chan json.RawMessage, within time.Duration, what string) json.RawMessage {
	t.Helper()
	select {
	case v := <-got:
		return v
	case <-time.After(within):
		t.Fatal(what)
		return nil
	}
}

func TestWaitResumesWithTheSignalPayload(t *testing.T) {
	t.Parallel()
	got := make(chan json.RawMessage, 1)
	f := start(t, bridge.NewRegistry().MustRegister(approvalWorkflow(time.Hour, got)))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, "waiting")
	// A signal of another name does not resume it.
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "rejected"}); r.Status != http.StatusAccepted {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "approved", "payload": map[string]any{"by": "ann"}})
	if r.Status != http.StatusAccepted || r.Map(t)["accepted"] != true {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	if v := resumedWith(t, got, 10*time.Second, "the run did not resume"); string(v) != `{"by":"ann"}` {
		t.Fatalf("wait returned %s", v)
	}
	f.h.WaitRun(f.key, runID, "completed")
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "approved"}); r.Status != http.StatusConflict || r.ErrorCode() != "run_finished" {
		t.Fatalf("signal to finished run: %d %s", r.Status, r.Body)
	}
}

func TestSignalBeforeTheWaitIsBuffered(t *testing.T) {
	t.Parallel()
	got := make(chan json.RawMessage, 1)
	gate := make(chan struct{})
	wf := bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Run(ctx, "slow", func(context.Context) (bool, error) { <-gate; return true, nil }); err != nil {
			return err
		}
		v, _, err := bridge.WaitForEvent[json.RawMessage](ctx, "decision", "approved", time.Hour)
		if err != nil {
			return err
		}
		got <- v
		return nil
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "approved"}); r.Status != http.StatusAccepted {
		t.Fatalf("early signal: %d %s", r.Status, r.Body)
	}
	close(gate)
	if v := resumedWith(t, got, 15*time.Second, "the buffered signal did not resume the wait"); v != nil && string(v) != "null" {
		t.Fatalf("buffered signal without payload gave %s", v)
	}
}

// A signal without payload (or with payload null) resumes its wait with
// output null (CONTRACT §8), long before the wait's timeout.
func TestSignalWithoutPayloadResumesWithNull(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]map[string]any{
		"absent": {"event": "approved"},
		"null":   {"event": "approved", "payload": nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := make(chan json.RawMessage, 1)
			f := start(t, bridge.NewRegistry().MustRegister(approvalWorkflow(time.Hour, got)))
			runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
			f.h.WaitRun(f.key, runID, "waiting")
			if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, body); r.Status != http.StatusAccepted {
				t.Fatalf("signal: %d %s", r.Status, r.Body)
			}
			if v := resumedWith(t, got, 10*time.Second, "the signal did not resume the wait"); v != nil && string(v) != "null" {
				t.Fatalf("the wait resumed with %s", v)
			}
			f.h.WaitRun(f.key, runID, "completed")
			var run struct {
				Steps []struct {
					StepID string
					Output json.RawMessage
				}
			}
			f.h.Do("GET", "/v1/runs/"+runID, f.key, nil).JSON(t, &run)
			for _, s := range run.Steps {
				if s.StepID == "decision" && string(s.Output) != "null" {
					t.Fatalf("the wait's recorded output is %s", s.Output)
				}
			}
		})
	}
}

func TestWaitTimesOutWithNull(t *testing.T) {
	t.Parallel()
	got := make(chan json.RawMessage, 1)
	f := start(t, bridge.NewRegistry().MustRegister(approvalWorkflow(time.Second, got)))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
	if v := resumedWith(t, got, 10*time.Second, "the wait did not time out"); v != nil && string(v) != "null" {
		t.Fatalf("timeout gave %s", v)
	}
	f.h.WaitRun(f.key, runID, "completed")
}

func TestSignalErrors(t *testing.T) {
	t.Parallel()
	f := start(t, bridge.NewRegistry().MustRegister(approvalWorkflow(time.Hour, make(chan json.RawMessage, 1))))
	if r := f.h.Do("POST", "/v1/events/run_nope/signal", f.key, map[string]any{"event": "x"}); r.Status != http.StatusNotFound {
		t.Fatalf("unknown run: %d %s", r.Status, r.Body)
	}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{}); r.Status != 422 {
		t.Fatalf("no event: %d %s", r.Status, r.Body)
	}
	_, otherKey := f.h.Tenant("Other")
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", otherKey, map[string]any{"event": "approved"}); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant's run: %d %s", r.Status, r.Body)
	}
	if r := f.h.Do("GET", "/v1/runs/"+runID, otherKey, nil); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant reads the run: %d", r.Status)
	}
}

func TestCancelEndsAWaitingRun(t *testing.T) {
	t.Parallel()
	got := make(chan json.RawMessage, 1)
	f := start(t, bridge.NewRegistry().MustRegister(approvalWorkflow(2*time.Second, got)))
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, "waiting")
	if r := f.h.Do("POST", "/v1/runs/"+runID+"/cancel", f.key, nil); r.Status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	run := f.h.WaitRun(f.key, runID, "cancelled")
	if run["error"].(map[string]any)["code"] != "cancelled" {
		t.Fatalf("run %v", run)
	}
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "approved"}); r.Status != http.StatusConflict {
		t.Fatalf("signal after cancel: %d", r.Status)
	}
	select {
	case <-got:
		t.Fatal("a cancelled run resumed")
	case <-time.After(3 * time.Second):
	}
}

func TestTriggerValidationAndIdempotency(t *testing.T) {
	t.Parallel()
	f := start(t, bridge.NewRegistry().MustRegister(bridge.MustWorkflow("w", func(*bridge.Context, any) error { return nil })))
	bad := []map[string]any{
		{"workflowId": "w", "to": map[string]any{}},
		{"workflowId": "w", "to": map[string]any{"subscriberId": "u1", "topics": []string{"a"}}},
		{"workflowId": "w"},
		{"workflowId": "bad-id", "to": map[string]any{"subscriberId": "u1"}},
		{"workflowId": "w", "to": map[string]any{"topics": []string{"bad key!"}}},
		{"workflowId": "w", "to": map[string]any{"subscriberId": "u1"}, "payload": []int{1}},
	}
	for _, b := range bad {
		if r := f.h.Do("POST", "/v1/events", f.key, b); r.Status != 422 {
			t.Fatalf("%v: %d %s", b, r.Status, r.Body)
		}
	}
	body := map[string]any{"workflowId": "w", "to": map[string]any{"subscriberId": "u1"}, "transactionId": "order-42"}
	first := f.h.Do("POST", "/v1/events", f.key, body)
	second := f.h.Do("POST", "/v1/events", f.key, body)
	if first.Status != 202 || second.Status != 202 || string(first.Body) != string(second.Body) {
		t.Fatalf("repeat: %s vs %s", first.Body, second.Body)
	}
	r := f.h.Do("GET", "/v1/runs?transactionId=order-42", f.key, nil)
	var runs struct{ Data []map[string]any }
	r.JSON(t, &runs)
	if len(runs.Data) != 1 {
		t.Fatalf("runs of the transaction: %s", r.Body)
	}
	// Another tenant may use the same transaction id.
	_, otherKey := f.h.Tenant("Other")
	if r := f.h.Do("POST", "/v1/events", otherKey, body); r.Status != http.StatusConflict || r.ErrorCode() != "bridge_not_configured" {
		t.Fatalf("other tenant without a bridge: %d %s", r.Status, r.Body)
	}
}

func TestRotatedSecretSignsRunsInFlight(t *testing.T) {
	t.Parallel()
	got := make(chan json.RawMessage, 2)
	d := testherald.NewStandInDelivery(t)
	h := testherald.Start(t, testherald.Options{DeliverURL: d.URL})
	_, key := h.Tenant("Acme")
	b := h.Bridge(key, bridge.NewRegistry().MustRegister(approvalWorkflow(time.Hour, got)))
	f := &fixture{h: h, key: key}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"}}))
	h.WaitRun(key, runID, "waiting")
	b.Rotate() // the Bridge now refuses the old secret
	if r := h.Do("POST", "/v1/events/"+runID+"/signal", key, map[string]any{"event": "approved", "payload": map[string]any{"n": 1}}); r.Status != 202 {
		t.Fatalf("signal: %d", r.Status)
	}
	run := h.WaitRun(key, runID, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("run after rotation: %v", run)
	}
}
