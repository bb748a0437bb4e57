package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// A subscriber edited between two steps of a run: every execute request
// of the run carries the subscriber as of the run's start, so a workflow
// that branches on it replays the same way and does not fail as
// non-deterministic.
func TestSubscriberFrozenAtRunStartE2E(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []bridge.Subscriber
	wf := bridge.MustWorkflow("plans", func(ctx *bridge.Context, _ any) error {
		mu.Lock()
		seen = append(seen, *ctx.Subscriber)
		mu.Unlock()
		plan, _ := ctx.Subscriber.Attributes["plan"].(string)
		// The step id depends on the subscriber: another subscriber on
		// replay would be another workflow.
		if _, err := bridge.Run(ctx, "greet-"+plan, func(context.Context) (string, error) { return plan, nil }); err != nil {
			return err
		}
		if _, _, err := bridge.WaitForEvent[any](ctx, "wait", "go", time.Hour); err != nil {
			return err
		}
		_, err := bridge.Run(ctx, "after", func(context.Context) (string, error) { return ctx.Subscriber.Locale, nil })
		return err
	})
	f := start(t, bridge.NewRegistry().MustRegister(wf))
	put := func(plan, locale string) {
		t.Helper()
		r := f.h.Do("PUT", "/v1/subscribers/u1", f.key, map[string]any{"locale": locale,
			"contacts": map[string]any{"email": []string{plan + "@example.com"}}, "attributes": map[string]any{"plan": plan}})
		if r.Status >= 300 {
			t.Fatalf("put subscriber: %d %s", r.Status, r.Body)
		}
	}
	put("pro", "fr")
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "plans", "to": map[string]any{"subscriberId": "u1"}}))
	f.h.WaitRun(f.key, runID, "waiting")
	put("free", "de")
	if r := f.h.Do("POST", "/v1/events/"+runID+"/signal", f.key, map[string]any{"event": "go"}); r.Status != http.StatusAccepted {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	run := f.h.WaitRun(f.key, runID, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("run: %v", run)
	}
	steps := run["steps"].([]any)
	if len(steps) != 3 || steps[0].(map[string]any)["stepId"] != "greet-pro" || steps[2].(map[string]any)["output"] != "fr" {
		t.Fatalf("steps %v", steps)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("the Bridge was called %d times", len(seen))
	}
	for i, s := range seen {
		if s.SubscriberID != "u1" || s.Locale != "fr" || s.Attributes["plan"] != "pro" || len(s.Contacts["email"]) != 1 || s.Contacts["email"][0] != "pro@example.com" {
			t.Fatalf("call %d saw subscriber %+v, want the one of the run's start", i, s)
		}
	}
}

// The frozen subscriber and a first `run` step's result are one event; a
// first `send` step's subscriber is on record before the delivery.
func TestFirstRunStepRecordedWithSubscriberE2E(t *testing.T) {
	t.Parallel()
	loadThenSend := loadThenEmail("loadsend", "pro")
	sendOnly := bridge.MustWorkflow("send", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "s", Body: "b"}, nil
		})
		return err
	})
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"locale": "fr",
		"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(loadThenSend).MustRegister(sendOnly))
	f := &fixture{h: h, key: key}
	ctx := context.Background()
	history := func(runID string) []eventlog.Event {
		t.Helper()
		if run := h.WaitRun(key, runID, "completed", "failed"); run["status"] != "completed" {
			t.Fatalf("run: %v", run)
		}
		evs, err := h.Log().History(ctx, eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	types := func(evs []eventlog.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Type)
		}
		return out
	}

	// The send's result goes in the run's end (see TestLastSendRecordedWithCompletionE2E).
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "loadsend", "to": map[string]any{"subscriberId": "u1"}}))
	evs := history(runID)
	want := []string{events.RunStarted, events.RunSubscriberRecorded, events.RunCompleted}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	var d events.RunSubscriberRecordedData
	if err := evs[1].Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Step == nil || d.Step.StepID != "load" || string(d.Step.Output) != `"pro"` || !strings.Contains(string(d.Subscriber), `"fr"`) {
		t.Fatalf("RunSubscriberRecorded %+v (step %+v)", d, d.Step)
	}

	runID = one(t, f.trigger(t, map[string]any{"workflowId": "send", "to": map[string]any{"subscriberId": "u1"}}))
	evs = history(runID)
	want = []string{events.RunStarted, events.RunSubscriberRecorded, events.RunCompleted}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	d = events.RunSubscriberRecordedData{}
	if err := evs[1].Decode(&d); err != nil || d.Step != nil {
		t.Fatalf("RunSubscriberRecorded before a send carries a step: %+v, %v", d.Step, err)
	}
	ledger, err := h.Log().History(ctx, eventlog.Subject(tenant, eventlog.AggDelivery, runID+":email"), 0)
	if err != nil || len(ledger) == 0 || ledger[0].Seq < evs[1].Seq {
		t.Fatalf("the delivery (%v, %v) went before the subscriber was on record (#%d)", ledger, err, evs[1].Seq)
	}
	if n := m.Accepted(); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}

	// Erasing the subscriber deletes the event, the first step with it;
	// the run stays.
	first := one(t, f.trigger(t, map[string]any{"workflowId": "loadsend", "to": map[string]any{"subscriberId": "u1"}}))
	history(first)
	if r := h.Do("DELETE", "/v1/subscribers/u1?erase=true", key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	evs, err = h.Log().History(ctx, eventlog.Subject(tenant, eventlog.AggRun, first), 0)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{events.RunStarted, events.RunCompleted}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("history after the erasure %v, want %v", got, want)
	}
	if run := h.WaitRun(key, first, "completed"); run["status"] != "completed" {
		t.Fatalf("the erased subscriber's run: %v", run)
	}
}

// A send whose result the Bridge answers the run's end to is recorded in
// the RunCompleted (one append less); a send followed by another step is
// recorded on its own, before that step. The run reads the same either way.
func TestLastSendRecordedWithCompletionE2E(t *testing.T) {
	t.Parallel()
	send := func(ctx *bridge.Context) error {
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "s", Body: "b"}, nil
		})
		return err
	}
	run := func(ctx *bridge.Context, id string) error {
		_, err := bridge.Run(ctx, id, func(context.Context) (string, error) { return "pro", nil })
		return err
	}
	loadSend := bridge.MustWorkflow("loadsend", func(ctx *bridge.Context, _ any) error {
		if err := run(ctx, "load"); err != nil {
			return err
		}
		return send(ctx)
	})
	sendLoad := bridge.MustWorkflow("sendload", func(ctx *bridge.Context, _ any) error {
		if err := send(ctx); err != nil {
			return err
		}
		return run(ctx, "after")
	})
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{
		"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(loadSend).MustRegister(sendLoad))
	f := &fixture{h: h, key: key}
	finish := func(workflow string) (map[string]any, []eventlog.Event) {
		t.Helper()
		runID := one(t, f.trigger(t, map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": "u1"}}))
		row := h.WaitRun(key, runID, "completed", "failed")
		if row["status"] != "completed" {
			t.Fatalf("run: %v", row)
		}
		evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
		if err != nil {
			t.Fatal(err)
		}
		return row, evs
	}
	types := func(evs []eventlog.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Type)
		}
		return out
	}
	sent := func(row map[string]any, i int) {
		t.Helper()
		step := row["steps"].([]any)[i].(map[string]any)
		out, _ := step["output"].(map[string]any)
		if step["stepId"] != "email" || step["status"] != "completed" || out["status"] != "sent" || out["attemptId"] == nil {
			t.Fatalf("send step %v", step)
		}
	}

	row, evs := finish("loadsend")
	if got, want := types(evs), []string{events.RunStarted, events.RunSubscriberRecorded, events.RunCompleted}; !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	var end events.RunCompletedData
	if err := evs[2].Decode(&end); err != nil {
		t.Fatal(err)
	}
	if end.Step == nil || end.Step.StepID != "email" || end.Step.Type != "send" || !strings.Contains(string(end.Step.Output), `"status":"sent"`) {
		t.Fatalf("RunCompleted carries %+v", end.Step)
	}
	sent(row, 1)

	row, evs = finish("sendload")
	want := []string{events.RunStarted, events.RunSubscriberRecorded, events.StepCompleted, events.StepCompleted, events.RunCompleted}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	var first events.StepCompletedData
	if err := evs[2].Decode(&first); err != nil || first.StepID != "email" {
		t.Fatalf("the send's StepCompleted %+v, %v", first, err)
	}
	end = events.RunCompletedData{}
	if err := evs[4].Decode(&end); err != nil || end.Step != nil {
		t.Fatalf("RunCompleted after a run step carries %+v, %v", end.Step, err)
	}
	sent(row, 0)
	if n := m.Accepted(); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}

// A held send whose run's end conflicts (a signal appended while the Bridge
// answered the end) is not lost and not sent twice: the turn re-reads the
// run, the send step is asked of delivery again under its key, which
// answers its first result, and the end carries it.
func TestHeldSendAcrossAConflict(t *testing.T) {
	t.Parallel()
	var h *testherald.Herald
	var key string
	var signalled atomic.Bool
	wf := bridge.MustWorkflow("sendsignal", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "s", Body: "b"}, nil
		})
		if err != nil {
			return err
		}
		// The call that ends the run: a signal appended now makes the
		// RunCompleted's expected sequence stale, once.
		if signalled.CompareAndSwap(false, true) {
			r, err := h.API(key).Send(context.Background(), "POST", "/v1/events/"+ctx.RunID+"/signal", map[string]any{"event": "noise"})
			if err != nil || r.Status != http.StatusAccepted {
				return fmt.Errorf("signal: %v %+v", err, r)
			}
		}
		return nil
	})
	m := testsmtp.Start(t, testsmtp.Options{})
	h = testherald.Start(t, testherald.Options{})
	var tenant string
	tenant, key = h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{
		"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	f := &fixture{h: h, key: key}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "sendsignal", "to": map[string]any{"subscriberId": "u1"}}))
	if row := h.WaitRun(key, runID, "completed", "failed"); row["status"] != "completed" {
		t.Fatalf("run: %v", row)
	}
	evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Type)
	}
	want := []string{events.RunStarted, events.RunSubscriberRecorded, events.SignalReceived, events.RunCompleted}
	if !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	var end events.RunCompletedData
	if err := evs[3].Decode(&end); err != nil || end.Step == nil || end.Step.StepID != "email" ||
		!strings.Contains(string(end.Step.Output), `"status":"sent"`) {
		t.Fatalf("RunCompleted carries %+v, %v", end.Step, err)
	}
	if !signalled.Load() {
		t.Fatal("the signal was not sent: no conflict tested")
	}
	if n := m.Accepted(); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}
