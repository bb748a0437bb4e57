package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// timeZone is the subscriber's zone in the time tests: half an hour off
// UTC, so that a time read in UTC instead would be far off.
const timeZone = "Asia/Kolkata"

// localMinute is the local time, in zone, whole minutes after now's
// minute, as "HH:MM", and the instant it is next.
func localMinute(t *testing.T, zone string, now time.Time, minutes int) (string, time.Time) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	at := now.In(loc).Truncate(time.Minute).Add(time.Duration(minutes) * time.Minute)
	return at.Format("15:04"), at.UTC()
}

// runHistory returns the events of a run.
func runHistory(t *testing.T, h *testherald.Herald, tenant, runID string) []eventlog.Event {
	t.Helper()
	evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// sleeps returns the RunSleeping events of a history.
func sleeps(t *testing.T, evs []eventlog.Event) []events.RunSleepingData {
	t.Helper()
	var out []events.RunSleepingData
	for _, ev := range evs {
		if ev.Type == events.RunSleeping {
			var d events.RunSleepingData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// deliveredAt returns the instant the run's one delivery was recorded.
func deliveredAt(t *testing.T, h *testherald.Herald, key, runID string) time.Time {
	t.Helper()
	r := h.Do("GET", "/v1/deliveries?runId="+runID, key, nil)
	var page struct {
		Data []struct {
			Status    string
			CreatedAt time.Time
		}
	}
	r.JSON(t, &page)
	if r.Status != http.StatusOK || len(page.Data) != 1 || page.Data[0].Status != "sent" {
		t.Fatalf("deliveries of %s: %d %s", runID, r.Status, r.Body)
	}
	return page.Data[0].CreatedAt
}

// stepOutput returns the output of the run's step stepID.
func stepOutput(t *testing.T, run map[string]any, stepID string) map[string]any {
	t.Helper()
	for _, s := range run["steps"].([]any) {
		if s := s.(map[string]any); s["stepId"] == stepID {
			out, _ := s["output"].(map[string]any)
			return out
		}
	}
	t.Fatalf("run %v has no step %s", run["runId"], stepID)
	return nil
}

// TestTimeZonesE2E, against a real service, Bridge and SMTP server, for
// a subscriber in a time zone of its own (sent to the Bridge):
//
//   - a send inside its quiet hours (a window from a minute before now
//     to the first minute at least 30 s ahead, read in its zone) is held:
//     the run sleeps, nothing is sent, and the email goes once the window
//     ended, with heldUntil in the step's output; a critical workflow's
//     send is not held;
//   - a delay until a local time (the window's end) ends at that time in
//     its zone, its send not held;
//   - a digest on a cron schedule (the same minute) closes at the
//     schedule's instant in its zone, with every run that reached it.
func TestTimeZonesE2E(t *testing.T) {
	// It waits for the clock (a minute or two): beside other tests.
	t.Parallel()
	var mu sync.Mutex
	zones := map[string]bool{}
	mail := func(ctx *bridge.Context, id string) error {
		mu.Lock()
		zones[ctx.Subscriber.Timezone] = true
		mu.Unlock()
		_, err := bridge.Send(ctx, id, bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: ctx.WorkflowID, Body: "b"}, nil
		})
		return err
	}
	news := bridge.MustWorkflow("news", func(ctx *bridge.Context, _ any) error { return mail(ctx, "mail") })
	reset := bridge.MustWorkflow("reset", func(ctx *bridge.Context, _ any) error { return mail(ctx, "mail") },
		bridge.WithCritical())
	morning := bridge.MustWorkflow("morning", func(ctx *bridge.Context, p struct{ At string }) error {
		if err := bridge.DelayUntilLocal(ctx, "wake", p.At); err != nil {
			return err
		}
		return mail(ctx, "mail")
	})
	daily := bridge.MustWorkflow("daily", func(ctx *bridge.Context, p struct{ Cron string }) error {
		res, err := bridge.Digest(ctx, "gather", 0, bridge.DigestCron(p.Cron))
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "mail", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "daily", Body: fmt.Sprintf("count=%d", res.Count)}, nil
		})
		return err
	})
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	h.Bridge(key, bridge.NewRegistry().MustRegister(news, reset, morning, daily))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"timezone": timeZone,
		"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status != http.StatusCreated ||
		!strings.Contains(string(r.Body), `"timezone":"`+timeZone+`"`) {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	// One instant ends the quiet hours, wakes the delay and closes the
	// digest: the first minute at least 30 s ahead (time for the runs to
	// reach their steps before it).
	now := time.Now()
	ahead := 1
	if now.Truncate(time.Minute).Add(time.Minute).Sub(now) < 30*time.Second {
		ahead = 2
	}
	start, _ := localMinute(t, timeZone, now, -1)
	end, endAt := localMinute(t, timeZone, now, ahead)
	if r := h.Do("PATCH", "/v1/subscribers/u1/preferences", key,
		map[string]any{"quietHours": map[string]string{"start": start, "end": end}}); r.Status != http.StatusOK {
		t.Fatalf("preferences: %d %s", r.Status, r.Body)
	}
	wake, wakeAt := localMinute(t, timeZone, now, ahead)
	closeAt := endAt
	local := closeAt.In(mustZone(t, timeZone))
	cron := fmt.Sprintf("%d %d * * *", local.Minute(), local.Hour())

	trigger := func(workflow string, payload any) string {
		body := map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": "u1"}}
		if payload != nil {
			body["payload"] = payload
		}
		r := h.Do("POST", "/v1/events", key, body)
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		if r.Status != http.StatusAccepted || len(res.Runs) != 1 {
			t.Fatalf("trigger %s: %d %s", workflow, r.Status, r.Body)
		}
		return res.Runs[0].RunID
	}
	held := trigger("news", nil)
	critical := trigger("reset", nil)
	delayed := trigger("morning", map[string]any{"at": wake})
	digests := []string{trigger("daily", map[string]any{"cron": cron}), trigger("daily", map[string]any{"cron": cron}),
		trigger("daily", map[string]any{"cron": cron})}

	// The critical send is not held.
	run := h.WaitRun(key, critical, "completed", "failed")
	if out := stepOutput(t, run, "mail"); run["status"] != "completed" || out["status"] != "sent" || out["heldUntil"] != nil {
		t.Fatalf("critical run: %v", run)
	}
	if s := sleeps(t, runHistory(t, h, tenant, critical)); len(s) != 0 {
		t.Fatalf("the critical run slept: %+v", s)
	}

	// The non-critical one sleeps until the window's end, nothing sent.
	if run := h.WaitRun(key, held, "sleeping", "completed", "failed"); run["status"] != "sleeping" {
		t.Fatalf("the send inside quiet hours was not held: %v", run)
	}
	s := sleeps(t, runHistory(t, h, tenant, held))
	if len(s) != 1 || s[0].Type != "send" || s[0].Reason != events.SleepQuietHours || !s[0].Until.Equal(endAt) ||
		s[0].Timezone != timeZone || !strings.Contains(string(s[0].QuietHours), `"end":"`+end+`"`) {
		t.Fatalf("the hold on record: %+v, want until %s", s, endAt)
	}
	for _, msg := range m.Messages() {
		if strings.Contains(string(msg.Data), "Subject: news") {
			t.Fatal("the held send went out while its run slept")
		}
	}

	// It goes once the window ended.
	run = h.WaitRunWithin(key, held, 5*time.Minute, "completed", "failed")
	out := stepOutput(t, run, "mail")
	if run["status"] != "completed" || out["status"] != "sent" || out["heldUntil"] != endAt.Format(time.RFC3339) {
		t.Fatalf("held run: %v, want heldUntil %s", run, endAt.Format(time.RFC3339))
	}
	if at := deliveredAt(t, h, key, held); at.Before(endAt) {
		t.Fatalf("the held send went at %s, before the window's end %s", at, endAt)
	}

	// The delay ends at the local time.
	run = h.WaitRunWithin(key, delayed, 5*time.Minute, "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("delayed run: %v", run)
	}
	// It woke as the quiet hours ended: its send was not held.
	if s := sleeps(t, runHistory(t, h, tenant, delayed)); len(s) != 1 || s[0].StepID != "wake" || !s[0].Until.Equal(wakeAt) {
		t.Fatalf("the delay on record: %+v, want one sleep until %s (%s in %s)", s, wakeAt, wake, timeZone)
	}
	if at := deliveredAt(t, h, key, delayed); at.Before(wakeAt) {
		t.Fatalf("the delayed send went at %s, before %s", at, wakeAt)
	}

	// The digest closes at the cron's instant, with the three runs: the
	// run that opened the window (whichever reached its step first)
	// completes, the others are digested into it.
	var collector string
	for _, id := range digests {
		run := h.WaitRunWithin(key, id, 5*time.Minute, "completed", "digested", "failed")
		switch run["status"] {
		case "completed":
			if collector != "" {
				t.Fatalf("two digest runs completed: %s and %s", collector, id)
			}
			collector = id
			if res := stepOutput(t, run, "gather"); res["count"] != float64(3) {
				t.Fatalf("digest run: %v", run)
			}
		case "digested":
		default:
			t.Fatalf("digest run: %v", run)
		}
	}
	if collector == "" {
		t.Fatal("no digest run completed")
	}
	if s := sleeps(t, runHistory(t, h, tenant, collector)); len(s) != 1 || s[0].Type != "digest" || !s[0].Until.Equal(closeAt) {
		t.Fatalf("the digest window on record: %+v, want closing at %s (%q in %s)", s, closeAt, cron, timeZone)
	}
	digestMails := 0
	for _, msg := range m.Messages() {
		if strings.Contains(string(msg.Data), "Subject: daily") {
			digestMails++
			if !strings.Contains(string(msg.Data), "count=3") {
				t.Fatalf("digest mail: %s", msg.Data)
			}
		}
	}
	if digestMails != 1 {
		t.Fatalf("%d digest emails, want 1", digestMails)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(zones) != 1 || !zones[timeZone] {
		t.Fatalf("the Bridge saw the subscriber's time zones %v, want %s", zones, timeZone)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestSubscriberTimezoneValidatedE2E: a time zone is an IANA name; any
// other value is a 422 naming timezone, and null clears it.
func TestSubscriberTimezoneValidatedE2E(t *testing.T) {
	t.Parallel()
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	for _, bad := range []any{"Mars/Olympus", "", "Local", 7, strings.Repeat("A", 65), "../../etc/passwd"} {
		r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"timezone": bad})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), `"timezone"`) {
			t.Errorf("timezone %q: %d %s", bad, r.Status, r.Body)
		}
	}
	var sub struct{ Timezone *string }
	r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"timezone": "America/New_York"})
	r.JSON(t, &sub)
	if r.Status != http.StatusCreated || sub.Timezone == nil || *sub.Timezone != "America/New_York" {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	r = h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"locale": "en"})
	if r.JSON(t, &sub); sub.Timezone == nil || *sub.Timezone != "America/New_York" {
		t.Fatalf("an upsert without timezone dropped it: %s", r.Body)
	}
	r = h.Do("PUT", "/v1/subscribers/u1", key, json.RawMessage(`{"timezone":null}`))
	if r.JSON(t, &sub); r.Status != http.StatusOK || sub.Timezone != nil || !strings.Contains(string(r.Body), `"timezone":null`) {
		t.Fatalf("null: %d %s", r.Status, r.Body)
	}
	r = h.Do("POST", "/v1/subscribers/bulk", key, map[string]any{"subscribers": []any{
		map[string]any{"subscriberId": "u2", "timezone": "Europe/Paris"}, map[string]any{"subscriberId": "u3", "timezone": "Nowhere"}}})
	if !strings.Contains(string(r.Body), `"status":201`) || !strings.Contains(string(r.Body), `"timezone"`) {
		t.Fatalf("bulk: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/v1/subscribers/u2", key, nil); !strings.Contains(string(r.Body), `"timezone":"Europe/Paris"`) {
		t.Fatalf("bulk-created: %s", r.Body)
	}
}
