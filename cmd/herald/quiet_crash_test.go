package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestCrashWhileHeldForQuietHours kills the child (SIGKILL) while the
// sends of 60 runs are held by their subscribers' quiet hours (a window
// from a minute before now to a minute boundary 50 to 110 s ahead; half the subscribers in a zone
// of their own, half in UTC), and restarts it: every run completes with
// exactly one message, none received before the window's end, each
// step's output naming that end as heldUntil.
func TestCrashWhileHeldForQuietHours(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts child processes")
	}
	t.Parallel() // it waits for the clock: beside the other crash tests
	const n = 60
	w := newCrashWorld(t)
	w.audience("quiet", "q", n)
	// The window ends at the first minute at least 50 s ahead: time for
	// the sends to be held and the child killed and restarted before it.
	now := time.Now()
	ends := now.Truncate(time.Minute).Add(time.Minute)
	if ends.Sub(now) < 50*time.Second {
		ends = ends.Add(time.Minute)
	}
	window := func(zone string) (start, end string, endAt time.Time) {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		return now.In(loc).Add(-time.Minute).Format("15:04"), ends.In(loc).Format("15:04"), ends.UTC()
	}
	var endAt time.Time
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		zone := "UTC"
		if i%2 == 1 {
			zone = "Asia/Kolkata" // UTC+05:30: its minutes end when UTC's do
		}
		start, end, at := window(zone)
		endAt = at
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := fmt.Sprintf("q%05d", i)
			if zone != "UTC" {
				w.api.must("PUT", "/v1/subscribers/"+id, map[string]any{"timezone": zone}, 200)
			}
			w.api.must("PATCH", "/v1/subscribers/"+id+"/preferences",
				map[string]any{"quietHours": map[string]string{"start": start, "end": end}}, 200)
		}()
	}
	wg.Wait()
	w.api.must("POST", "/v1/events", map[string]any{"workflowId": "quick",
		"to": map[string]any{"topics": []string{"quiet"}}, "transactionId": "crash-quiet"}, 202)
	w.waitAll("crash-quiet", n, "sleeping")
	if got := w.inbox.Len(); got != 0 {
		t.Fatalf("%d messages went out while the sends were held", got)
	}
	w.restart()
	time.Sleep(time.Until(endAt)) // the clock the sends are held for; the guard counts from there
	runs := w.waitAll("crash-quiet", n, "completed")
	w.checkExactlyOnce(runs)
	for _, m := range w.inbox.Messages() {
		if m.ReceivedAt.Before(endAt) {
			t.Errorf("message %q received at %s, before the quiet hours ended at %s", m.Subject, m.ReceivedAt, endAt)
		}
	}
	for runID := range runs {
		var run struct {
			Steps []struct {
				StepID string
				Output json.RawMessage
			}
		}
		if _, err := w.api.c.Do(t.Context(), "GET", "/v1/runs/"+runID, nil, &run); err != nil {
			t.Fatal(err)
		}
		last := run.Steps[len(run.Steps)-1]
		var out struct{ Status, HeldUntil string }
		if err := json.Unmarshal(last.Output, &out); err != nil || last.StepID != "mail" || out.Status != "sent" ||
			out.HeldUntil != endAt.Format(time.RFC3339) {
			t.Fatalf("run %s: last step %s %s, want the mail sent, held until %s", runID, last.StepID, last.Output, endAt.Format(time.RFC3339))
		}
	}
}
