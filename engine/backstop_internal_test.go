package engine

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/nats-io/nats.go/jetstream"
)

// A fan-out that works longer than FanoutBackstop (here it waits for the
// projections, which lag, to resolve its audience) keeps its backstop
// ahead: no fan-out worker is sent to take it over while this process
// works on it, and none once it is done and the backstop cancelled.
func TestFanoutKeepsItsBackstopAheadWhileItWorks(t *testing.T) {
	t.Parallel()
	const backstop = time.Second
	e, l, store := newTestEngine(t, Config{FanoutBackstop: backstop})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const tenant, txn = "ten_backstop", "txn-slow"
	// A fan-out worker's view of the backstop.
	cons := workConsumer(ctx, t, l, eventlog.WorkFanout(tenant, txn))
	fired := func(wait time.Duration) bool {
		t.Helper()
		msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for range msgs.Messages() {
			n++
		}
		return n > 0
	}
	// What Trigger does: accept, arm the backstop, fan out, cancel it.
	acc := events.TriggerAcceptedData{WorkflowID: "wf", TransactionID: txn, Payload: []byte("{}"),
		To: events.Target{Topics: []string{"nobody"}}}
	if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTransaction, txn),
		Type: events.TriggerAccepted, Tenant: tenant, Data: acc, Expect: true}); err != nil {
		t.Fatal(err)
	}
	sched := eventlog.SchedSubject(tenant, "fanout", txn)
	if err := l.Schedule(ctx, sched, eventlog.WorkFanout(tenant, txn), time.Now().Add(backstop), nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.fanout(ctx, tenant, acc)
		done <- err
	}()
	// The projections are not running: the fan-out waits for them for
	// three backstops.
	if fired(3 * backstop) {
		t.Fatal("the backstop fired while the fan-out worked")
	}
	select {
	case err := <-done:
		t.Fatalf("the fan-out ended before the projections caught up: %v", err)
	default:
	}
	go store.Run(ctx, l, nil)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fan-out did not end once the projections caught up")
	}
	if err := l.Cancel(ctx, sched); err != nil {
		t.Fatal(err)
	}
	if fired(2 * backstop) {
		t.Fatal("a cancelled backstop fired")
	}
}
