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
// from a minute before now to the first minute boundary at least
// quietMargin ahead; half the subscribers in a zone of their own, half in
// UTC), and restarts it: every run completes with exactly one message,
// none received before the window's end, each step's output naming that
// end as heldUntil.
//
// A loaded machine may take longer than the margin to hold every send:
// the window then ends first, that try's runs send (once each) and the
// scenario is tried again on the next minute boundary. No clock bounds
// the test but the hang guard.
func TestCrashWhileHeldForQuietHours(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts child processes")
	}
	t.Parallel() // it waits for the clock: beside the other crash tests
	const n, quietMargin, tries = 60, 15 * time.Second, 4
	w := newCrashWorld(t)
	w.audience("quiet", "q", n)
	every := map[string]string{} // the runs of every try, each sent once
	var runs map[string]string
	var endAt time.Time
	var txn string
	for try := 1; ; try++ {
		now := time.Now()
		ends := now.Truncate(time.Minute).Add(time.Minute)
		if ends.Sub(now) < quietMargin {
			ends = ends.Add(time.Minute)
		}
		endAt = ends.UTC()
		w.quietUntil(n, now, ends)
		txn = fmt.Sprintf("crash-quiet-%d", try)
		w.api.must("POST", "/v1/events", map[string]any{"workflowId": "quick",
			"to": map[string]any{"topics": []string{"quiet"}}, "transactionId": txn}, 202)
		held := w.waitHeld(txn, n, endAt)
		if held {
			break
		}
		if try == tries {
			t.Fatalf("%d tries: the window ended before every send was held", tries)
		}
		t.Logf("try %d: the window ended at %s before every send was held; trying the next minute", try, endAt)
		for id, s := range w.waitAll(txn, n, "completed") {
			every[id] = s
		}
	}
	for _, m := range w.inbox.Messages() {
		if _, earlier := every[m.Subject]; !earlier {
			t.Fatalf("message %q went out while the sends were held", m.Subject)
		}
	}
	w.restart()
	time.Sleep(time.Until(endAt)) // the clock the sends are held for; the guard counts from there
	runs = w.waitAll(txn, n, "completed")
	for id, s := range runs {
		every[id] = s
	}
	w.checkExactlyOnce(every)
	for _, m := range w.inbox.Messages() {
		if _, now := runs[m.Subject]; now && m.ReceivedAt.Before(endAt) {
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

// quietUntil gives the n subscribers q00000… quiet hours from a minute
// before now to ends: the odd ones in Asia/Kolkata (UTC+05:30: its minutes
// end when UTC's do), the even ones in UTC.
func (w *crashWorld) quietUntil(n int, now, ends time.Time) {
	w.t.Helper()
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		w.t.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		loc := time.UTC
		if i%2 == 1 {
			loc = kolkata
		}
		start, end := now.In(loc).Add(-time.Minute).Format("15:04"), ends.In(loc).Format("15:04")
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := fmt.Sprintf("q%05d", i)
			if loc != time.UTC {
				w.api.must("PUT", "/v1/subscribers/"+id, map[string]any{"timezone": loc.String()}, 200)
			}
			w.api.must("PATCH", "/v1/subscribers/"+id+"/preferences",
				map[string]any{"quietHours": map[string]string{"start": start, "end": end}}, 200)
		}()
	}
	wg.Wait()
}

// waitHeld waits until the n runs of txn all sleep (their sends held), and
// reports false when the window ending at endAt ended first (a run went
// on, or the window is over with a run still not asleep).
func (w *crashWorld) waitHeld(txn string, n int, endAt time.Time) bool {
	deadline := time.Now().Add(hangGuard)
	for {
		over := !time.Now().Before(endAt)
		runs := w.runsOf(txn)
		asleep := 0
		for _, s := range runs {
			switch s {
			case "sleeping":
				asleep++
			case "completed", "failed":
				return false
			}
		}
		if len(runs) == n && asleep == n {
			return true
		}
		if over {
			return false
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%d of %d runs held after %v (%d runs known): %v", asleep, n, hangGuard, len(runs), histogram(runs))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
