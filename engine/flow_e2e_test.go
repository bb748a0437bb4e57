package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	netmail "net/mail"
	"net/url"
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
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// flowHerald is a service with an SMTP channel to a loopback sink and a
// subscriber u1 with an email address.
func flowHerald(t *testing.T, env map[string]string) (h *testherald.Herald, m *testsmtp.Server, tenant, key string) {
	t.Helper()
	return flowHeraldWith(t, testherald.Options{Env: env})
}

// flowHeraldWith is flowHerald with the service's options.
func flowHeraldWith(t *testing.T, opts testherald.Options) (h *testherald.Herald, m *testsmtp.Server, tenant, key string) {
	t.Helper()
	m = testsmtp.Start(t, testsmtp.Options{})
	h = testherald.Start(t, opts)
	tenant, key = h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{
		"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	return h, m, tenant, key
}

func mail(subject string) func(context.Context) (bridge.SendContent, error) {
	return func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: subject, Body: "b"}, nil
	}
}

// stepOf returns the step stepID of a run as GET /v1/runs shows it.
func stepOf(t *testing.T, run map[string]any, stepID string) map[string]any {
	t.Helper()
	for _, s := range run["steps"].([]any) {
		if st := s.(map[string]any); st["stepId"] == stepID {
			return st
		}
	}
	t.Fatalf("run has no step %s: %v", stepID, run["steps"])
	return nil
}

// A run failed by its Bridge (a step failing every attempt) is rerun once
// the Bridge recovers: it resumes at the failed step with its attempts
// counted afresh and completes; the steps completed before, an email
// among them, are never called again and nothing is sent twice.
func TestRerunFailedRunE2E(t *testing.T) {
	t.Parallel()
	var calls counter
	var broken atomic.Bool
	broken.Store(true)
	wf := bridge.MustWorkflow("order", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Run(ctx, "load", func(context.Context) (int, error) { calls.inc("load"); return 1, nil }); err != nil {
			return err
		}
		if _, err := bridge.Send(ctx, "welcome", "email", func(c context.Context) (bridge.SendContent, error) {
			calls.inc("welcome")
			return mail("Welcome")(c)
		}); err != nil {
			return err
		}
		if _, err := bridge.Run(ctx, "charge", func(context.Context) (string, error) {
			calls.inc("charge")
			if broken.Load() {
				return "", errors.New("the payment service is down")
			}
			return "ok", nil
		}); err != nil {
			return err
		}
		_, err := bridge.Send(ctx, "receipt", "email", func(c context.Context) (bridge.SendContent, error) {
			calls.inc("receipt")
			return mail("Receipt")(c)
		})
		return err
	})
	h, m, tenant, key := flowHerald(t, map[string]string{"HERALD_MAX_ATTEMPTS": "3"})
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	f := &fixture{h: h, key: key}
	runID := one(t, f.trigger(t, map[string]any{"workflowId": "order", "to": map[string]any{"subscriberId": "u1"}}))

	run := h.WaitRun(key, runID, "failed", "completed")
	if run["status"] != "failed" || run["error"].(map[string]any)["code"] != "attempts_exhausted" {
		t.Fatalf("run before the rerun: %v", run)
	}
	if st := stepOf(t, run, "charge"); st["status"] != "failed" || st["attempts"] != float64(3) {
		t.Fatalf("charge before the rerun: %v", st)
	}
	if got := []int{calls.get("load"), calls.get("welcome"), calls.get("charge"), len(m.Messages())}; fmt.Sprint(got) != "[1 1 3 1]" {
		t.Fatalf("load, welcome, charge calls and emails before the rerun: %v, want [1 1 3 1]", got)
	}

	// A run that is not failed, and a run that does not exist.
	if r := h.Do("POST", "/v1/runs/run_000000000000000000000000/rerun", key, nil); r.Status != http.StatusNotFound || r.ErrorCode() != "run_not_found" {
		t.Fatalf("rerun of no run: %d %s", r.Status, r.Body)
	}

	broken.Store(false) // the Bridge recovers
	if r := h.Do("POST", "/v1/runs/"+runID+"/rerun", key, nil); r.Status != http.StatusAccepted {
		t.Fatalf("rerun: %d %s", r.Status, r.Body)
	}
	run = h.WaitRun(key, runID, "completed", "failed")
	if run["status"] != "completed" || run["error"] != nil {
		t.Fatalf("run after the rerun: %v", run)
	}
	if st := stepOf(t, run, "charge"); st["status"] != "completed" || st["attempts"] != float64(1) {
		t.Fatalf("charge after the rerun: %v (attempts counted afresh: 1)", st)
	}
	for _, id := range []string{"load", "welcome", "receipt"} {
		if st := stepOf(t, run, id); st["status"] != "completed" || st["attempts"] != float64(1) {
			t.Fatalf("step %s after the rerun: %v", id, st)
		}
	}
	// The completed steps were replayed, not called: load and welcome once
	// in all; charge once more; one welcome and one receipt sent.
	if got := []int{calls.get("load"), calls.get("welcome"), calls.get("charge"), calls.get("receipt")}; fmt.Sprint(got) != "[1 1 4 1]" {
		t.Fatalf("load, welcome, charge, receipt calls: %v, want [1 1 4 1]", got)
	}
	var subjects []string
	for _, msg := range m.Messages() {
		for _, line := range strings.Split(string(msg.Data), "\r\n") {
			if s, ok := strings.CutPrefix(line, "Subject: "); ok {
				subjects = append(subjects, s)
			}
		}
	}
	if fmt.Sprint(subjects) != "[Welcome Receipt]" {
		t.Fatalf("emails %v, want [Welcome Receipt]", subjects)
	}

	// The rerun is an event of its own after the failure, which stays on
	// record: who asked, and the failure it resumed from.
	evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		t.Fatal(err)
	}
	failedAt, rerunAt := -1, -1
	for i, ev := range evs {
		switch ev.Type {
		case events.RunFailed:
			failedAt = i
		case events.RunRerun:
			rerunAt = i
			var d events.RunRerunData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			if d.StepID != "charge" || d.Code != "attempts_exhausted" || !strings.HasPrefix(d.Actor, "hk_") ||
				strings.Contains(d.Actor, key[len(d.Actor):]) {
				t.Fatalf("rerun event %+v", d)
			}
		}
	}
	if failedAt < 0 || rerunAt != failedAt+1 {
		t.Fatalf("history %v: want the RunFailed kept, the RunRerun right after it", evs)
	}

	// A completed run is not failed: 409.
	if r := h.Do("POST", "/v1/runs/"+runID+"/rerun", key, nil); r.Status != http.StatusConflict || r.ErrorCode() != "run_not_failed" {
		t.Fatalf("rerun of a completed run: %d %s", r.Status, r.Body)
	}
}

// A running (waiting) run and a cancelled run are not failed either.
func TestRerunOfARunNotFailedE2E(t *testing.T) {
	t.Parallel()
	f, runID := startWaiting(t, "wait", "go")
	if r := f.h.Do("POST", "/v1/runs/"+runID+"/rerun", f.key, nil); r.Status != http.StatusConflict || r.ErrorCode() != "run_not_failed" {
		t.Fatalf("rerun of a waiting run: %d %s", r.Status, r.Body)
	}
	if r := f.h.Do("POST", "/v1/runs/"+runID+"/cancel", f.key, nil); r.Status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if r := f.h.Do("POST", "/v1/runs/"+runID+"/rerun", f.key, nil); r.Status != http.StatusConflict || r.ErrorCode() != "run_not_failed" {
		t.Fatalf("rerun of a cancelled run: %d %s", r.Status, r.Body)
	}
	if r := f.h.Do("POST", "/v1/runs/"+runID+"/rerun", f.key, map[string]any{"x": 1}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("rerun with an unknown field: %d %s", r.Status, r.Body)
	}
}

// listTxnRuns lists a transaction's runs through the API.
func listTxnRuns(t *testing.T, h *testherald.Herald, key, txn string) []map[string]any {
	t.Helper()
	var all []map[string]any
	cursor := ""
	for {
		path := "/v1/runs?limit=500&transactionId=" + url.QueryEscape(txn)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := h.Do("GET", path, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("list runs: %d %s", r.Status, r.Body)
		}
		var page struct {
			Data       []map[string]any
			NextCursor *string
		}
		r.JSON(t, &page)
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

// A transaction cancelled while its fan-out of 250 runs (in chunks of
// 100, answered with its runs: under the threshold, raised to 250) is
// still starting: the cancel answers how many runs it ended, every run ends
// either completed (it sent before the cancel) or cancelled, the runs the
// fan-out started after the cancel never call the Bridge, and nothing of
// the transaction is sent once the cancel answered.
func TestCancelTransactionMidFanoutE2E(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	const n = 250
	var calls counter
	wf := bridge.MustWorkflow("promo", func(ctx *bridge.Context, _ any) error {
		calls.inc(ctx.RunID)
		_, err := bridge.Send(ctx, "promo", "email", mail(ctx.RunID))
		return err
	})
	h, m, tenant, key := flowHeraldWith(t, testherald.Options{Tune: func(c *service.Config) {
		c.FanoutChunk, c.BroadcastThreshold = broadcastChunk, n
	}})
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	h.SeedTopic(tenant, "all", n, "example.com")
	ctx := context.Background()

	// The cancel must land while the fan-out starts runs: it is sent as
	// soon as the fan-out's first chunk is received.
	var trig testherald.Response
	txn, cancelled, _ := testherald.CancelMidFanout(t, h.Log(), h.API(key), tenant, "promo", func(txn string) func() {
		done := make(chan testherald.Response, 1)
		go func() {
			r, _ := h.API(key).Send(ctx, "POST", "/v1/events", map[string]any{"workflowId": "promo",
				"to": map[string]any{"topics": []string{"all"}}, "transactionId": txn})
			done <- r
		}()
		return func() { trig = <-done }
	})
	// A try the cancel came too late for (its fan-out done) goes on
	// sending: only this transaction's runs' emails count, told by their
	// subject, the run's id.
	ofTxn := func() []string {
		var subjects []string
		for _, msg := range m.Messages() {
			if parsed, err := netmail.ReadMessage(bytes.NewReader(msg.Data)); err == nil {
				if sub := parsed.Header.Get("Subject"); strings.HasPrefix(sub, "run_") {
					subjects = append(subjects, sub)
				}
			}
		}
		return subjects
	}
	txnRuns := func() map[string]string { // run id → subscriber
		out := map[string]string{}
		for _, run := range listTxnRuns(t, h, key, txn) {
			out[run["runId"].(string)] = run["subscriberId"].(string)
		}
		return out
	}
	countOfTxn := func(subjects []string) int {
		mine, k := txnRuns(), 0
		for _, sub := range subjects {
			if _, ok := mine[sub]; ok {
				k++
			}
		}
		return k
	}
	sentAtAnswer := countOfTxn(ofTxn())
	if trig.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", trig.Status, trig.Body)
	}
	var answer struct{ Runs []map[string]any }
	trig.JSON(t, &answer)
	if len(answer.Runs) != n {
		t.Fatalf("the trigger answered %d runs, want %d", len(answer.Runs), n)
	}

	// Every run ends: completed or cancelled, nothing left running.
	var runs []map[string]any
	testwait.Until(t, "every run finished", func() error {
		runs = listTxnRuns(t, h, key, txn)
		finished := 0
		for _, run := range runs {
			if s := run["status"]; s == "completed" || s == "cancelled" || s == "failed" {
				finished++
			}
		}
		if len(runs) != n || finished != n {
			return fmt.Errorf("%d runs listed, %d finished, want %d", len(runs), finished, n)
		}
		return nil
	})
	status := map[string]int{}
	completedSubs := map[string]bool{}
	for _, run := range runs {
		status[run["status"].(string)]++
		if run["status"] == "completed" {
			completedSubs[run["subscriberId"].(string)] = true
		}
	}
	if status["completed"]+status["cancelled"] != n || status["cancelled"] != cancelled {
		t.Fatalf("runs by status %v, the cancel answered %d: want completed + cancelled = %d and cancelled = the answer",
			status, cancelled, n)
	}

	// Nothing is sent after the cancel answered: wait a while for a late
	// send (a turn enqueued before the cancel), then count.
	time.Sleep(2 * time.Second)
	subjects := ofTxn()
	if k := countOfTxn(subjects); k != sentAtAnswer {
		t.Fatalf("%d emails when the cancel answered, %d later", sentAtAnswer, k)
	}
	mine := txnRuns()
	// Each completed run sent its one email; an email to a cancelled run's
	// subscriber is one a turn under way sent before the cancel reached
	// its run (the cancel waits for such a turn in this process).
	got := map[string]int{}
	sent := 0
	for _, sub := range subjects {
		if subscriber, ok := mine[sub]; ok {
			got[subscriber]++
			sent++
		}
	}
	for sub := range completedSubs {
		if got[sub] != 1 {
			t.Fatalf("completed run of %s: %d emails", sub, got[sub])
		}
	}
	extra := 0
	for sub, k := range got {
		if k != 1 {
			t.Fatalf("%s got %d emails", sub, k)
		}
		if !completedSubs[sub] {
			extra++
		}
	}
	// The runs the fan-out started after the cancel never called the
	// Bridge.
	untouched := 0
	for runID := range mine {
		if calls.get(runID) == 0 {
			untouched++
		}
	}
	t.Logf("cancel answered %d; runs %v; emails %d (%d by runs cancelled mid-turn); runs that never called the Bridge %d",
		cancelled, status, sent, extra, untouched)
	if untouched == 0 || cancelled == 0 {
		t.Fatal("every run called the Bridge: the cancel did not stop the fan-out's runs")
	}

	// A repeated cancel finds the transaction cancelled and ends nothing.
	r := h.Do("POST", "/v1/transactions/"+url.PathEscape(txn)+"/cancel", key, nil)
	if r.Status != http.StatusAccepted || r.Map(t)["cancelled"] != float64(0) {
		t.Fatalf("repeated cancel: %d %s, want 0", r.Status, r.Body)
	}
}

// A transaction cancel of runs already under way (waiting): every one is
// cancelled, its event says why and who asked; an unknown transaction is
// 404 and a cancel of a finished transaction ends nothing more.
func TestCancelTransactionOfWaitingRunsE2E(t *testing.T) {
	t.Parallel()
	h, _, tenant, key := flowHerald(t, nil)
	h.Bridge(key, bridge.NewRegistry().MustRegister(waitingFor("wait", "go")))
	h.SeedTopic(tenant, "team", 3, "example.com")
	f := &fixture{h: h, key: key}
	runs := f.trigger(t, map[string]any{"workflowId": "wait", "to": map[string]any{"topics": []string{"team"}}, "transactionId": "order-1"})
	single := one(t, f.trigger(t, map[string]any{"workflowId": "wait", "to": map[string]any{"subscriberId": "u1"}, "transactionId": "order-2"}))
	for _, run := range runs {
		h.WaitRun(key, run["runId"].(string), "waiting")
	}
	h.WaitRun(key, single, "waiting")
	// One run of order-1 cancelled alone first: not the transaction's doing.
	if r := h.Do("POST", "/v1/runs/"+runs[0]["runId"].(string)+"/cancel", key, nil); r.Status != http.StatusAccepted {
		t.Fatalf("cancel run: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/v1/transactions/order-1/cancel", key, nil); r.Status != http.StatusAccepted || r.Map(t)["cancelled"] != float64(2) {
		t.Fatalf("cancel order-1: %d %s, want 2", r.Status, r.Body)
	}
	// The count is what the call ended: a second cancel ends nothing.
	if r := h.Do("POST", "/v1/transactions/order-1/cancel", key, nil); r.Status != http.StatusAccepted || r.Map(t)["cancelled"] != float64(0) {
		t.Fatalf("cancel order-1 again: %d %s, want 0", r.Status, r.Body)
	}
	for i, run := range runs {
		// The answer waited for the projections: the runs read cancelled.
		r := h.Do("GET", "/v1/runs/"+run["runId"].(string), key, nil)
		if got := r.Map(t)["status"]; got != "cancelled" {
			t.Fatalf("run %d: %v", i, got)
		}
		evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, run["runId"].(string)), 0)
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		var d events.RunCancelledData
		if err := last.Decode(&d); err != nil || last.Type != events.RunCancelled || !strings.HasPrefix(d.Actor, "hk_") || last.At.IsZero() {
			t.Fatalf("run %d ends with %s %s", i, last.Type, last.Data)
		}
		if want := map[bool]string{true: "", false: events.CancelTransaction}[i == 0]; d.Reason != want {
			t.Fatalf("run %d cancelled for %q, want %q", i, d.Reason, want)
		}
	}
	if run := h.WaitRun(key, single, "waiting", "cancelled"); run["status"] != "waiting" {
		t.Fatalf("the run of another transaction: %v", run["status"])
	}
	if r := h.Do("POST", "/v1/transactions/order-2/cancel", key, nil); r.Status != http.StatusAccepted || r.Map(t)["cancelled"] != float64(1) {
		t.Fatalf("cancel order-2: %d %s, want 1", r.Status, r.Body)
	}
	run := h.WaitRun(key, single, "cancelled")
	if run["error"].(map[string]any)["code"] != "cancelled" {
		t.Fatalf("run: %v", run)
	}
	// The wait under way when the cancel came ended cancelled with it.
	if steps := run["steps"].([]any); len(steps) != 1 || steps[0].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("the cancelled run's steps: %v", steps)
	}
	if r := h.Do("POST", "/v1/transactions/order-2/cancel", key, nil); r.Status != http.StatusAccepted || r.Map(t)["cancelled"] != float64(0) {
		t.Fatalf("cancel order-2 again: %d %s, want 0", r.Status, r.Body)
	}
	for _, txn := range []string{"nope", "a%20b"} {
		if r := h.Do("POST", "/v1/transactions/"+txn+"/cancel", key, nil); r.Status != http.StatusNotFound || r.ErrorCode() != "transaction_not_found" {
			t.Fatalf("cancel of no transaction %s: %d %s", txn, r.Status, r.Body)
		}
	}
	// Another tenant's transaction is none of this tenant's.
	_, key2 := h.Tenant("Other")
	if r := h.Do("POST", "/v1/transactions/order-1/cancel", key2, nil); r.Status != http.StatusNotFound {
		t.Fatalf("cancel of another tenant's transaction: %d %s", r.Status, r.Body)
	}
}

// A signal by transaction reaches every waiting run of it; by transaction
// and subscriber, that subscriber's run only.
func TestSignalTransactionE2E(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	resumed := map[string]any{}
	wf := bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ any) error {
		v, ok, err := bridge.WaitForEvent[map[string]any](ctx, "w", "approved", time.Hour)
		if err != nil {
			return err
		}
		if _, err := bridge.Run(ctx, "note", func(context.Context) (bool, error) {
			mu.Lock()
			resumed[ctx.Subscriber.SubscriberID] = v["by"]
			mu.Unlock()
			return ok, nil
		}); err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "done", "email", mail("Approved"))
		return err
	})
	h, m, tenant, key := flowHerald(t, nil)
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	ids := h.SeedTopic(tenant, "team", 3, "example.com")
	f := &fixture{h: h, key: key}
	runs := f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"topics": []string{"team"}},
		"transactionId": "approval-1"})
	other := f.trigger(t, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "approval-2"})
	byID := map[string]string{}
	for _, run := range append(runs, other...) {
		byID[run["subscriberId"].(string)] = run["runId"].(string)
		h.WaitRun(key, run["runId"].(string), "waiting")
	}

	signal := func(body map[string]any) (int, string, float64) {
		t.Helper()
		r := h.Do("POST", "/v1/signals", key, body)
		if r.Status != http.StatusAccepted {
			return r.Status, r.ErrorCode(), -1
		}
		return r.Status, "", r.Map(t)["runs"].(float64)
	}
	// By transaction and subscriber: that run only.
	if st, code, n := signal(map[string]any{"event": "approved", "transactionId": "approval-1", "subscriberId": ids[1],
		"payload": map[string]any{"by": "ann"}}); n != 1 {
		t.Fatalf("signal to one subscriber: %d %s runs %v", st, code, n)
	}
	h.WaitRun(key, byID[ids[1]], "completed")
	for _, id := range []string{ids[0], ids[2], "u1"} {
		if run := h.WaitRun(key, byID[id], "waiting", "completed"); run["status"] != "waiting" {
			t.Fatalf("run of %s: %v", id, run["status"])
		}
	}
	// By transaction: every unfinished run of it (the completed one is
	// finished), none of another transaction.
	if st, code, n := signal(map[string]any{"event": "approved", "transactionId": "approval-1",
		"payload": map[string]any{"by": "bob"}}); n != 2 {
		t.Fatalf("signal to the transaction: %d %s runs %v", st, code, n)
	}
	for _, id := range []string{ids[0], ids[2]} {
		h.WaitRun(key, byID[id], "completed")
	}
	if run := h.WaitRun(key, byID["u1"], "waiting", "completed"); run["status"] != "waiting" {
		t.Fatalf("the run of another transaction: %v", run["status"])
	}
	mu.Lock()
	if fmt.Sprint(resumed) != fmt.Sprintf("map[%s:bob %s:ann %s:bob]", ids[0], ids[1], ids[2]) {
		t.Fatalf("resumed with %v", resumed)
	}
	mu.Unlock()
	if len(m.Messages()) != 3 {
		t.Fatalf("%d emails, want 3", len(m.Messages()))
	}
	// The run's own form still works.
	if r := h.Do("POST", "/v1/events/"+byID["u1"]+"/signal", key, map[string]any{"event": "approved"}); r.Status != http.StatusAccepted {
		t.Fatalf("signal to a run: %d %s", r.Status, r.Body)
	}
	h.WaitRun(key, byID["u1"], "completed")

	// Bad requests.
	for _, c := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{"event": "approved", "transactionId": "nope"}, 404, "transaction_not_found"},
		{map[string]any{"event": "approved"}, 422, "validation_failed"},
		{map[string]any{"transactionId": "approval-1"}, 422, "validation_failed"},
		{map[string]any{"event": "approved", "transactionId": "approval-1", "runId": "x"}, 422, ""},
		{map[string]any{"event": "approved", "transactionId": "approval-1", "subscriberId": ""}, 422, "validation_failed"},
	} {
		if st, code, _ := signal(c.body); st != c.status || (c.code != "" && code != c.code) {
			t.Errorf("signal %v: %d %s, want %d %s", c.body, st, code, c.status, c.code)
		}
	}
	// Every run of the transaction is finished now: a signal reaches none.
	if _, _, n := signal(map[string]any{"event": "approved", "transactionId": "approval-1"}); n != 0 {
		t.Fatalf("signal to a finished transaction reached %v runs", n)
	}
}
