package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// activityCron is the example's ACTIVITY_DIGEST_CRON in the tests: the
// activity digest closes every 5 seconds.
const activityCron = "*/5 * * * * *"

// tipZone is the time zone of the subscriber of morning_tip: half an hour
// off UTC, so that a local time read in UTC instead would be far off.
const tipZone = "Asia/Kolkata"

// features drives, against a Bridge serving them (the Go example or the
// TypeScript one, the same workflows under the same ids), the workflows
// that show a throttle, a delay until a local time, a digest closed by a
// cron expression and a payload schema. The tenant has an email channel to
// mail; the subscribers kim and lee are its own.
type features struct {
	t          *testing.T
	h          *testherald.Herald
	key        string
	mail       *testsmtp.Server
	tip        string    // the morning_tip run
	tipWakesAt time.Time // the instant its delay ends
}

// startFeatures adds kim and lee and starts the morning_tip run, which
// sleeps until a local time (the first minute at least 40 s ahead: time
// for the run to reach its delay first): the caller drives its other
// workflows, then calls finish.
func startFeatures(t *testing.T, h *testherald.Herald, key string, mail *testsmtp.Server) *features {
	t.Helper()
	f := &features{t: t, h: h, key: key, mail: mail}
	f.do("PUT", "/v1/subscribers/kim", map[string]any{"timezone": tipZone,
		"contacts": map[string]any{"email": []string{"kim@example.com"}}}, http.StatusCreated)
	f.do("PUT", "/v1/subscribers/lee", map[string]any{"contacts": map[string]any{"email": []string{"lee@example.com"}}}, http.StatusCreated)

	loc, err := time.LoadLocation(tipZone)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	wake := now.Truncate(time.Minute).Add(time.Minute)
	if wake.Sub(now) < 40*time.Second { // time for the run to reach its delay first
		wake = wake.Add(time.Minute)
	}
	f.tipWakesAt = wake.UTC()
	f.tip = f.trigger("morning_tip", "kim", map[string]any{"text": "Pin the tabs you use most.", "at": wake.In(loc).Format("15:04")})
	h.WaitRun(key, f.tip, "sleeping")
	// The delay ends at that local time, read in kim's zone: the instant
	// Herald recorded when the run reached it.
	if s := f.sleeps(f.tip); len(s) != 1 || len(s["until-morning"]) != 1 || !s["until-morning"][0].Equal(f.tipWakesAt) {
		t.Fatalf("morning_tip sleeps %v, want until-morning until %s (%s in %s)", s, f.tipWakesAt, wake.In(loc).Format("15:04"), tipZone)
	}
	return f
}

func (f *features) do(method, path string, body any, want int) testherald.Response {
	f.t.Helper()
	r := f.h.Do(method, path, f.key, body)
	if r.Status != want {
		f.t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
	}
	return r
}

func (f *features) trigger(workflow, subscriber string, payload any) string {
	f.t.Helper()
	var tr struct{ Runs []struct{ RunID string } }
	f.do("POST", "/v1/events", map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": subscriber},
		"payload": payload}, http.StatusAccepted).JSON(f.t, &tr)
	if len(tr.Runs) != 1 {
		f.t.Fatalf("trigger %s: %+v", workflow, tr)
	}
	return tr.Runs[0].RunID
}

// completed waits for the run to end and fails the test unless it completed.
func (f *features) completed(runID string) map[string]any {
	f.t.Helper()
	run := f.h.WaitRun(f.key, runID, "completed", "failed", "cancelled")
	if run["status"] != "completed" {
		f.t.Fatalf("run %s of %s: %v", runID, run["workflowId"], run)
	}
	return run
}

// mails returns the subjects of the messages to addr that contain text.
func (f *features) mails(addr, text string) []string {
	var out []string
	for _, m := range f.mail.Messages() {
		if len(m.To) == 1 && m.To[0] == addr && strings.Contains(string(m.Data), text) {
			for line := range strings.Lines(string(m.Data)) {
				if s, ok := strings.CutPrefix(line, "Subject: "); ok {
					out = append(out, strings.TrimSpace(s))
				}
			}
		}
	}
	return out
}

func (f *features) waitMail(addr, text string) {
	f.t.Helper()
	testwait.For(f.t, fmt.Sprintf("mail to %s with %q", addr, text), func() bool { return len(f.mails(addr, text)) > 0 })
}

// sleeps returns, by step id, the instants until which the run slept, from
// its timeline (GET /v1/runs/{runId}/events).
func (f *features) sleeps(runID string) map[string][]time.Time {
	f.t.Helper()
	var timeline struct {
		Data []struct {
			Type string
			Data struct {
				StepID string
				Until  time.Time
			}
		}
	}
	f.do("GET", "/v1/runs/"+runID+"/events", nil, http.StatusOK).JSON(f.t, &timeline)
	out := map[string][]time.Time{}
	for _, ev := range timeline.Data {
		if ev.Type == "RunSleeping" {
			out[ev.Data.StepID] = append(out[ev.Data.StepID], ev.Data.Until)
		}
	}
	return out
}

// deliveryRow is what the tests read of a row of GET /v1/deliveries.
type deliveryRow struct {
	Status    string
	CreatedAt time.Time
}

// step returns the run's step stepID, nil when it has none.
func step(run map[string]any, stepID string) map[string]any {
	steps, _ := run["steps"].([]any)
	for _, s := range steps {
		if s, _ := s.(map[string]any); s["stepId"] == stepID {
			return s
		}
	}
	return nil
}

// finish drives price_alert, activity_digest and invoice_paid, then checks
// that the morning_tip run sent nothing before its local time.
func (f *features) finish() {
	t := f.t
	t.Helper()

	// price_alert: at most 3 an hour to lee. Each run ends before the next
	// starts, so the counts are 1 to 4; the fourth is throttled and sends
	// nothing.
	for i := 1; i <= 4; i++ {
		product := fmt.Sprintf("Kettle %d", i)
		run := f.completed(f.trigger("price_alert", "lee", map[string]any{"product": product, "price": "19 EUR"}))
		out, _ := step(run, "at-most-3-an-hour")["output"].(map[string]any)
		if out["count"] != float64(i) || out["throttled"] != (i > 3) {
			t.Fatalf("price_alert %d: throttle output %v, want count %d, throttled %v", i, out, i, i > 3)
		}
		if sent := step(run, "email") != nil; sent == (i > 3) {
			t.Fatalf("price_alert %d: sent %v: %v", i, sent, run)
		}
		if i <= 3 {
			f.waitMail("lee@example.com", "Price drop: "+product)
		}
	}
	if got := f.mails("lee@example.com", "Price drop: "); len(got) != 3 {
		t.Fatalf("lee got %d price alerts, want 3: %v", len(got), got)
	}

	// activity_digest: three activities for lee, gathered until the cron's
	// next tick (every 5 s here). A loaded machine may start a run after
	// a window closed: then it opens the next one. Each window closes on a
	// tick and mails what it gathered; together they hold the three.
	var runs []string
	for _, action := range []string{"liked your post", "replied to you", "followed you"} {
		runs = append(runs, f.trigger("activity_digest", "lee", map[string]any{"actor": "ada", "action": action}))
	}
	gathered := 0
	for _, id := range runs {
		run := f.h.WaitRun(f.key, id, "completed", "digested", "failed", "cancelled")
		switch run["status"] {
		case "digested":
			continue
		case "completed":
		default:
			t.Fatalf("activity_digest run: %v", run)
		}
		out, _ := step(run, "gather")["output"].(map[string]any)
		n, _ := out["count"].(float64)
		gathered += int(n)
		f.waitMail("lee@example.com", fmt.Sprintf("Your activity digest: %d updates", int(n)))
		if u := f.sleeps(id)["gather"]; len(u) != 1 || u[0].Nanosecond() != 0 || u[0].Second()%5 != 0 {
			t.Fatalf("the digest window of %s did not close on a tick of %q: %v", id, activityCron, u)
		}
	}
	if gathered != 3 {
		t.Fatalf("the activity digests gathered %d activities, want 3", gathered)
	}

	// invoice_paid: a payload its schema refuses is 422 invalid_payload,
	// naming each bad field, and starts nothing; a good one is mailed.
	bad := f.h.Do("POST", "/v1/events", f.key, map[string]any{"workflowId": "invoice_paid", "to": map[string]any{"subscriberId": "lee"},
		"payload": map[string]any{"invoiceId": "", "amount": 0, "currency": "XYZ"}})
	var refusal struct {
		Error struct {
			Code    string
			Details []struct{ Field string }
		}
	}
	bad.JSON(t, &refusal)
	var fields []string
	for _, d := range refusal.Error.Details {
		fields = append(fields, d.Field)
	}
	if bad.Status != http.StatusUnprocessableEntity || refusal.Error.Code != "invalid_payload" ||
		strings.Join(fields, " ") != "payload.amount payload.currency payload.invoiceId" {
		t.Fatalf("a bad invoice_paid payload: %d %s", bad.Status, bad.Body)
	}
	var list struct{ Data []any }
	f.do("GET", "/v1/runs?workflowId=invoice_paid", nil, http.StatusOK).JSON(t, &list)
	if len(list.Data) != 0 {
		t.Fatalf("the refused trigger started runs: %v", list.Data)
	}
	f.completed(f.trigger("invoice_paid", "lee", map[string]any{"invoiceId": "INV-7", "amount": 12.5, "currency": "EUR"}))
	f.waitMail("lee@example.com", "We received 12.50 EUR for invoice INV-7.")

	// morning_tip: nothing is sent before kim's clock reads the time. Its
	// delay was recorded to end on that instant (startFeatures); that a
	// run asleep until a local time wakes on it and sends is the engine's
	// TestTimeZonesE2E, so this test does not wait for the clock.
	var rows struct{ Data []deliveryRow }
	f.do("GET", "/v1/deliveries?runId="+f.tip, nil, http.StatusOK).JSON(t, &rows)
	if slices.ContainsFunc(rows.Data, func(d deliveryRow) bool { return d.CreatedAt.Before(f.tipWakesAt) }) {
		t.Fatalf("morning_tip's e-mail, due at %s, went early: %+v", f.tipWakesAt, rows.Data)
	}
}
