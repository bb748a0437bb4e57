package control_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// subscribe appends subscribers s<from>…s<to-1> and their subscriptions
// to topic, and waits until the projections hold them.
func (h *channelHarness) subscribe(t *testing.T, tenant, topic string, from, to int) {
	t.Helper()
	ctx := context.Background()
	var last uint64
	for i := from; i < to; i++ {
		id := fmt.Sprintf("s%05d", i)
		if _, err := h.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, id),
			Type: events.SubscriberUpserted, Tenant: tenant,
			Data: events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{}}}); err != nil {
			t.Fatal(err)
		}
		seq, err := h.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTopic, topic),
			Type: events.SubscriberSubscribed, Tenant: tenant,
			Data: events.SubscriberSubscribedData{SubscriberID: id, TopicKey: topic}})
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	if err := h.store.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
}

// A trigger whose topics have more than BroadcastThreshold distinct
// subscribers is answered once accepted, with their count and no runs, and
// its fan-out handed to the runtime (nothing is fanned out before the
// answer). A subscriber of several topics counts once: topics whose
// counts add up past the threshold but whose distinct audience does not
// are answered with their runs, as any other trigger. A repeat of a
// broadcast's transaction answers the same, handing nothing over again.
func TestBroadcastTriggerAnswersBeforeItsFanOut(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 1))
	rt := &runtime{}
	h.rebuild(control.Config{Runtime: rt})
	ctx := context.Background()
	if _, err := h.ctl.ConfigureBridge(ctx, "ten_1", "https://bridge.example/h"); err != nil {
		t.Fatal(err)
	}
	// a: s0–s699; b: s400–s1099 (1,100 distinct, 1,400 summed); c: s0–s699
	// again (700 distinct with a, 1,400 summed).
	h.subscribe(t, "ten_1", "a", 0, 700)
	h.subscribe(t, "ten_1", "b", 400, 1100)
	h.subscribe(t, "ten_1", "c", 0, 700)
	trigger := func(txn string, topics ...string) control.TriggerResult {
		t.Helper()
		res, err := h.ctl.Trigger(ctx, "ten_1", control.TriggerCommand{WorkflowID: "promo", TransactionID: &txn,
			To: &control.TriggerTarget{Topics: &topics}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := trigger("big", "a", "b", "nobody")
	if res.Recipients == nil || *res.Recipients != 1100 || res.Runs != nil {
		t.Fatalf("broadcast answered %+v, want 1100 recipients and no runs", res)
	}
	if len(rt.broadcasts) != 1 || len(rt.fanouts) != 0 || *rt.broadcasts[0].Recipients != 1100 {
		t.Fatalf("%d broadcasts, %d fan-outs: the broadcast must be handed over, not fanned out", len(rt.broadcasts), len(rt.fanouts))
	}
	first, ok, err := h.log.First(ctx, eventlog.Subject("ten_1", eventlog.AggTransaction, "big"))
	var acc events.TriggerAcceptedData
	if err != nil || !ok || first.Decode(&acc) != nil || acc.Recipients == nil || *acc.Recipients != 1100 {
		t.Fatalf("accepted: %v %v %+v", ok, err, acc)
	}
	again := trigger("big", "a", "b", "nobody")
	if again.Recipients == nil || *again.Recipients != 1100 || again.Runs != nil || len(rt.broadcasts) != 1 || len(rt.fanouts) != 0 {
		t.Fatalf("repeat answered %+v (%d broadcasts, %d fan-outs)", again, len(rt.broadcasts), len(rt.fanouts))
	}

	small := trigger("overlap", "a", "c")
	if small.Recipients != nil || small.Runs == nil || len(rt.fanouts) != 1 || len(rt.broadcasts) != 1 {
		t.Fatalf("700 distinct subscribers answered %+v (%d fan-outs)", small, len(rt.fanouts))
	}
	if one := trigger("one", "b"); one.Recipients != nil || len(rt.fanouts) != 2 {
		t.Fatalf("700 subscribers answered %+v", one)
	}
}
