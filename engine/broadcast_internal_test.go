package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// A broadcast's fan-out taken up after an earlier attempt dispatched its
// first chunk (a crash between chunks) goes on after that chunk's last
// subscriber, reading the audience a chunk at a time: every subscriber of
// the two topics (a shared one counted once) is dispatched exactly once,
// and the completion records the audience's count. Taken up once more, it
// finds the fan-out complete and writes nothing.
func TestBroadcastResumesAfterItsLastChunk(t *testing.T) {
	t.Parallel()
	const fanoutChunk = 100 // chunks as the default's, a tenth of the runs
	e, l, store := newTestEngine(t, Config{FanoutChunk: fanoutChunk})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go store.Run(ctx, l, nil)

	const tenant, txn = "ten_bc", "txn-bc"
	n := 2*fanoutChunk + 7
	var subs []string
	var recs []eventlog.Record
	for i := range n {
		s := fmt.Sprintf("u%05d", i)
		subs = append(subs, s)
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, s), Type: events.SubscriberUpserted,
			Tenant: tenant, Data: events.SubscriberUpsertedData{SubscriberID: s, Contacts: map[string][]string{}}})
		topics := []string{"all"}
		if i%3 == 0 {
			topics = append(topics, "some")
		}
		for _, topic := range topics {
			recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTopic, topic), Type: events.SubscriberSubscribed,
				Tenant: tenant, Data: events.SubscriberSubscribedData{SubscriberID: s, TopicKey: topic}})
		}
	}
	if _, errs := l.AppendEach(ctx, recs); errs != nil {
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	acc := events.TriggerAcceptedData{WorkflowID: "wf", TransactionID: txn, Payload: []byte("{}"),
		To: events.Target{Topics: []string{"some", "all"}}, Recipients: &n}
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	if _, err := l.Append(ctx, eventlog.Record{Subject: subject, Type: events.TriggerAccepted, Tenant: tenant, Data: acc, Expect: true}); err != nil {
		t.Fatal(err)
	}
	if err := store.WaitCaughtUp(ctx, l); err != nil {
		t.Fatal(err)
	}
	// The earlier attempt: the first chunk, dispatched.
	if _, err := e.dispatch(ctx, tenant, acc, subs[:fanoutChunk], &txnWatch{}); err != nil {
		t.Fatal(err)
	}
	if err := e.broadcast(ctx, tenant, acc); err != nil {
		t.Fatal(err)
	}
	count := func() (seen map[string]int, completed, total, evs int) {
		history, err := l.History(ctx, subject, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen, total = map[string]int{}, -1
		for _, ev := range history {
			switch ev.Type {
			case events.NotificationsDispatched:
				var d events.NotificationsDispatchedData
				if err := ev.Decode(&d); err != nil {
					t.Fatal(err)
				}
				for _, r := range d.Runs {
					seen[r.SubscriberID]++
				}
			case events.FanoutCompleted:
				var d events.FanoutCompletedData
				if err := ev.Decode(&d); err != nil {
					t.Fatal(err)
				}
				completed++
				total = d.Count
			}
		}
		return seen, completed, total, len(history)
	}
	seen, completed, total, events1 := count()
	for _, s := range subs {
		if seen[s] != 1 {
			t.Fatalf("%s dispatched %d times, want once", s, seen[s])
		}
	}
	if len(seen) != n || completed != 1 || total != n {
		t.Fatalf("%d dispatched, %d completions counting %d, want %d", len(seen), completed, total, n)
	}
	if err := e.broadcast(ctx, tenant, acc); err != nil {
		t.Fatal(err)
	}
	if _, completed, _, events2 := count(); completed != 1 || events2 != events1 {
		t.Fatalf("taken up again: %d completions, %d events (was %d)", completed, events2, events1)
	}
}
