package testherald

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testapi"
)

// CancelMidFanout cancels a transaction while its fan-out is starting
// runs, and returns the transaction, the count of runs its cancel
// answered, and when the answer came (no earlier). For the transactions prefix-0, prefix-1, … it calls
// trigger(txn), which sends the transaction's topic trigger and returns a
// wait for its answer; as soon as log holds the fan-out's first chunk, it
// cancels the transaction through api (the tenant's key, on any process)
// and waits for the trigger. A machine fast enough to finish the fan-out
// before the cancel tries another transaction (5 tries).
func CancelMidFanout(t testing.TB, log *eventlog.Log, api *testapi.Client, tenant, prefix string,
	trigger func(txn string) (wait func())) (txn string, cancelled int, answered time.Time) {
	t.Helper()
	return cancelMid(t, log, api, tenant, prefix, trigger, "the fan-out finished before the cancel",
		func(cancelAt, completedAt uint64, _ []eventlog.Event) bool { return cancelAt < completedAt })
}

// CancelBeforeAChunk is CancelMidFanout for a fan-out of several chunks,
// whose test needs runs the fan-out started cancelled: a try counts only
// when a chunk was received after the cancel was recorded. That chunk
// reads the transaction after it started its runs, so it starts them
// cancelled (see the engine's txncancel.go). A loaded machine whose cancel
// lands after the last chunk began tries another transaction.
func CancelBeforeAChunk(t testing.TB, log *eventlog.Log, api *testapi.Client, tenant, prefix string,
	trigger func(txn string) (wait func())) (txn string, cancelled int, answered time.Time) {
	t.Helper()
	return cancelMid(t, log, api, tenant, prefix, trigger, "every chunk began before the cancel",
		func(cancelAt, _ uint64, evs []eventlog.Event) bool {
			for _, ev := range evs {
				if ev.Type == events.NotificationsReceived && ev.Seq > cancelAt {
					return true
				}
			}
			return false
		})
}

// cancelMid is CancelMidFanout with the condition landed, over the
// transaction's history once its cancel answered, that makes a try count.
func cancelMid(t testing.TB, log *eventlog.Log, api *testapi.Client, tenant, prefix string,
	trigger func(txn string) (wait func()), late string,
	landed func(cancelAt, completedAt uint64, evs []eventlog.Event) bool) (txn string, cancelled int, answered time.Time) {
	t.Helper()
	ctx := context.Background()
	// The cancel finishes the fan-out and reads every run before it
	// answers: on a loaded machine under the race detector that can
	// outlast a client's usual 30 s, which only guards against a hang.
	slow := *api
	slow.HTTP = &http.Client{Timeout: 5 * time.Minute}
	for try := 0; ; try++ {
		txn = fmt.Sprintf("%s-%d", prefix, try)
		subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
		wait := trigger(txn)
		// The deadline only guards against a hang.
		for deadline := time.Now().Add(2 * time.Minute); ; {
			if evs := history(t, log, subject); len(evs) > 1 {
				break // the first chunk is on record: its runs are starting
			}
			if time.Now().After(deadline) {
				t.Fatal("the fan-out did not begin")
			}
			time.Sleep(time.Millisecond)
		}
		began := time.Now()
		r, err := slow.Send(ctx, "POST", "/v1/transactions/"+url.PathEscape(txn)+"/cancel", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == http.StatusServiceUnavailable && try < 4 {
			// busy: a read or write of the cancel timed out on a loaded
			// machine. What it ended is unknown, so the try is of no use
			// to a test that counts: the cancel is repeated until it
			// answers (the transaction's runs end, and load with them),
			// then another transaction is tried.
			t.Logf("try %d: the cancel answered busy (%s); again", try, r.Body)
			for deadline := time.Now().Add(2 * time.Minute); r.Status == http.StatusServiceUnavailable; {
				if time.Now().After(deadline) {
					t.Fatalf("the cancel answered busy for two minutes: %s", r.Body)
				}
				if r, err = slow.Send(ctx, "POST", "/v1/transactions/"+url.PathEscape(txn)+"/cancel", nil); err != nil {
					t.Fatal(err)
				}
			}
			wait()
			continue
		}
		if r.Status != http.StatusAccepted {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		answered = time.Now()
		t.Logf("try %d: the cancel answered in %v", try, answered.Sub(began))
		var res struct{ Cancelled *int }
		r.JSON(t, &res)
		if res.Cancelled == nil {
			t.Fatalf("cancel answered %s", r.Body)
		}
		cancelled = *res.Cancelled
		wait()
		// The cancel is on record once it answered; the fan-out's end
		// too, or soon after for a broadcast, whose cancel answers before
		// its sweep finishes the fan-out. The deadline only guards
		// against a hang.
		var evs []eventlog.Event
		var cancelAt, completedAt uint64
		for deadline := time.Now().Add(2 * time.Minute); completedAt == 0; time.Sleep(10 * time.Millisecond) {
			evs = history(t, log, subject)
			for _, ev := range evs {
				switch ev.Type {
				case events.TransactionCancelled:
					cancelAt = ev.Seq
				case events.FanoutCompleted:
					completedAt = ev.Seq
				}
			}
			if cancelAt == 0 || time.Now().After(deadline) {
				t.Fatalf("transaction history without its cancel or its fan-out's end: %v", evs)
			}
		}
		if landed(cancelAt, completedAt, evs) {
			return txn, cancelled, answered
		}
		if try == 4 {
			t.Fatalf("%s 5 times in a row", late)
		}
		t.Logf("try %d: %s; again", try, late)
	}
}

// history reads a subject's events, again while the read fails (a read
// times out on a loaded machine) for up to two minutes, a guard against a
// hang.
func history(t testing.TB, log *eventlog.Log, subject string) []eventlog.Event {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		evs, err := log.History(context.Background(), subject, 0)
		if err == nil {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("history of %s: %v", subject, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
