package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// A fan-out taken up again after an earlier attempt dispatched some of
// its recipients (a crash between chunks) answers every recipient in the
// order resolved: the runs of the earlier attempt where they were, the
// rest started now, each once and under its derived id.
func TestFanoutResumedAnswersEveryRecipientInOrder(t *testing.T) {
	t.Parallel()
	const fanoutChunk = 100 // chunks as the default's, a tenth of the runs
	e, l, store := newTestEngine(t, Config{FanoutChunk: fanoutChunk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go store.Run(ctx, l, nil)

	const tenant, txn, topic, n = "ten_resume", "txn-resume", "all", fanoutChunk + 7
	var subs []string
	for i := range n {
		s := fmt.Sprintf("u%05d", i)
		subs = append(subs, s)
		for _, r := range []eventlog.Record{
			{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, s), Type: events.SubscriberUpserted, Tenant: tenant,
				Data: events.SubscriberUpsertedData{SubscriberID: s, Contacts: map[string][]string{}}},
			{Subject: eventlog.Subject(tenant, eventlog.AggTopic, topic), Type: events.SubscriberSubscribed, Tenant: tenant,
				Data: events.SubscriberSubscribedData{SubscriberID: s, TopicKey: topic}},
		} {
			if _, err := l.Append(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	acc := events.TriggerAcceptedData{WorkflowID: "wf", TransactionID: txn, Payload: []byte("{}"),
		To: events.Target{Topics: []string{topic}}}
	if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTransaction, txn),
		Type: events.TriggerAccepted, Tenant: tenant, Data: acc, Expect: true}); err != nil {
		t.Fatal(err)
	}
	// The earlier attempt: two recipients, one in each of the chunks to
	// come, dispatched out of order.
	earlier := []string{subs[fanoutChunk+3], subs[5]}
	if _, err := e.dispatch(ctx, tenant, acc, earlier, &txnWatch{}); err != nil {
		t.Fatal(err)
	}
	res, err := e.fanout(ctx, tenant, acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n {
		t.Fatalf("%d dispatches, want %d", len(res), n)
	}
	for i, d := range res {
		if d.SubscriberID != subs[i] || d.RunID != RunID(tenant, txn, subs[i]) || d.Status != events.NotificationDispatched {
			t.Fatalf("dispatch %d: %+v, want %s's run, dispatched", i, d, subs[i])
		}
	}
	// Every run started once: the earlier two were not started again.
	history, err := l.History(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn), 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ev := range history {
		if ev.Type != events.NotificationsDispatched {
			continue
		}
		var d events.NotificationsDispatchedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Runs {
			seen[r.SubscriberID]++
		}
	}
	for _, s := range subs {
		if seen[s] != 1 {
			t.Fatalf("%s dispatched %d times, want once", s, seen[s])
		}
	}
	// Asked again once complete, the answer holds the same runs (in the
	// order they were dispatched).
	again, err := e.fanout(ctx, tenant, acc)
	if err != nil {
		t.Fatal(err)
	}
	first := map[events.Dispatch]bool{}
	for _, d := range res {
		first[d] = true
	}
	if len(again) != len(res) {
		t.Fatalf("repeat: %d dispatches, want %d", len(again), len(res))
	}
	for _, d := range again {
		if !first[d] {
			t.Fatalf("repeat: %+v is not in the first answer", d)
		}
	}
}
