package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testwait"
)

// A single-subscriber trigger still at its writes holds no worker: its
// run's first work message, come meanwhile, is parked unacknowledged and
// handed on once the trigger is released, while the one worker takes the
// work queued behind it.
func TestTriggerAtItsWritesHoldsNoWorker(t *testing.T) {
	t.Parallel()
	// An AckWait far past testwait's guard: the trigger's message is
	// young throughout, so a worker that waited for the trigger would keep
	// the other work waiting until the guard, never pass by dropping it.
	e, l, _ := newTestEngine(t, Config{Workers: 1, AckWait: 10 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	queued := func(subject string) uint64 {
		t.Helper()
		st, err := l.JetStream().Stream(ctx, eventlog.WorkStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects[subject]
	}
	testwait.For(t, "every work consumer created", func() bool {
		cs, err := l.WorkConsumers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, c := range cs {
			have[c.Config.Durable] = true
		}
		for _, name := range []string{runsConsumer, bulkConsumer, wakesConsumer, fanoutConsumer, ticksConsumer} {
			if !have[name] {
				return false
			}
		}
		return true
	})

	const tenant = "ten_park"
	sub := "u1"
	acc := events.TriggerAcceptedData{TransactionID: "t1", WorkflowID: "wf", To: events.Target{SubscriberID: &sub},
		Payload: json.RawMessage(`{}`)}
	first := eventlog.WorkRun(tenant, RunID(tenant, "t1", sub))
	_, rel, err := e.Arm(ctx, tenant, acc)
	if err != nil {
		t.Fatal(err)
	}
	// Released once: below, or before the engine stops when a wait fails.
	release := sync.OnceFunc(rel)
	t.Cleanup(release)
	other := eventlog.WorkRun(tenant, "run_other") // no such run: its turn acknowledges it
	if err := l.Enqueue(ctx, other, nil, ""); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the work queued behind a trigger at its writes, taken without waiting for it",
		func() bool { return queued(other) == 0 })
	if queued(first) != 1 {
		t.Fatal("the trigger's work message is gone before the trigger was released")
	}
	e.starts.mu.Lock()
	parked := len(e.starts.m[RunID(tenant, "t1", sub)].parked)
	e.starts.mu.Unlock()
	if parked != 1 {
		t.Fatalf("%d messages parked, want the trigger's one", parked)
	}
	// Released with nothing accepted (a refused trigger): the message is
	// handed on, and its worker keeps it while it is young.
	release()
	time.Sleep(200 * time.Millisecond)
	e.starts.mu.Lock()
	left := len(e.starts.m)
	e.starts.mu.Unlock()
	if left != 0 || queued(first) != 1 {
		t.Fatalf("after the release: %d starts pending, %d messages queued", left, queued(first))
	}
}
