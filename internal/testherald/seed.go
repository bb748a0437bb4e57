package testherald

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
)

// SeedTopic writes n subscribers (s0000001…, each with an email address at
// domain) subscribed to topic straight into the event log, in batches, and
// waits until the projections hold them: audience set-up for benchmarks
// and load tests, far faster than n HTTP calls.
func (h *Herald) SeedTopic(tenant, topic string, n int, domain string) []string {
	h.t.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	const batch = 2000
	for start := 0; start < n; start += batch {
		var recs []eventlog.Record
		for i := start; i < min(start+batch, n); i++ {
			id := fmt.Sprintf("s%07d", i)
			ids[i] = id
			recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, id),
				Type: events.SubscriberUpserted, Tenant: tenant, MsgID: seedID(tenant, topic, id, "upserted@"+domain),
				Data: events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{"email": {id + "@" + domain}}}})
		}
		topicSubject := eventlog.Subject(tenant, eventlog.AggTopic, topic)
		for i := start; i < min(start+batch, n); i++ {
			recs = append(recs, eventlog.Record{Subject: topicSubject, Type: events.SubscriberSubscribed, Tenant: tenant,
				MsgID: seedID(tenant, topic, ids[i], "subscribed"),
				Data:  events.SubscriberSubscribedData{SubscriberID: ids[i], TopicKey: topic}})
		}
		testnats.Append(h.t, h.Log(), recs)
	}
	if err := h.Store().WaitCaughtUp(ctx, h.Log()); err != nil {
		h.t.Fatalf("seed: %v", err)
	}
	return ids
}

// seedID is a seeded record's message id: an acknowledgement lost on a
// loaded machine is asked for again (eventlog.Log.AppendEach), where a
// record without one fails the test.
func seedID(tenant, topic, id, what string) string {
	return "seed:" + tenant + ":" + topic + ":" + id + ":" + what
}
