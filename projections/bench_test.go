package projections_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
)

// BenchmarkProjectorApply measures the projector: b.N audience events
// (subscriber upserts and subscriptions, ~300 bytes each) are appended
// first, then a fresh store applies them from the log (tail + batched
// bbolt transactions). The figure is events applied per second.
func BenchmarkProjectorApply(b *testing.B) {
	l := testnats.Log(b)
	const batch = 2000
	var recs []eventlog.Record
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("s%08d", i)
		if i%2 == 0 {
			recs = append(recs, testnats.Subscriber("ten_b", id))
		} else {
			recs = append(recs, eventlog.Record{Subject: eventlog.Subject("ten_b", eventlog.AggTopic, fmt.Sprintf("t%d", i%50)),
				Type: events.SubscriberSubscribed, Tenant: "ten_b",
				Data: events.SubscriberSubscribedData{SubscriberID: fmt.Sprintf("s%08d", i-1), TopicKey: fmt.Sprintf("t%d", i%50)}})
		}
		if len(recs) == batch {
			testnats.Append(b, l, recs)
			recs = recs[:0]
		}
	}
	testnats.Append(b, l, recs)
	st := timedCatchUp(b, l)
	if st.Applied() < uint64(b.N) {
		b.Fatalf("applied %d of %d", st.Applied(), b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkProjectorApplyBulk measures the projector on a bulk import as
// POST /v1/subscribers/bulk writes it: per 1,000 subscribers, their
// upserts, then one SubscribersSubscribed for a topic they all join and
// one for each of 100 topics of 10. A fresh store applies them from the
// log; the figure is subscribers (with their two links) applied per
// second.
func BenchmarkProjectorApplyBulk(b *testing.B) {
	l := testnats.Log(b)
	const per = 1000
	for start := 0; start < b.N; start += per {
		var recs []eventlog.Record
		everyone := events.SubscribersSubscribedData{TopicKey: "everyone"}
		groups := map[string][]string{}
		for i := start; i < min(start+per, b.N); i++ {
			id := fmt.Sprintf("bulk-%d", i)
			recs = append(recs, testnats.Subscriber("ten_b", id))
			everyone.SubscriberIDs = append(everyone.SubscriberIDs, id)
			topic := fmt.Sprintf("t%d", i%100)
			groups[topic] = append(groups[topic], id)
		}
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject("ten_b", eventlog.AggTopic, "everyone"),
			Type: events.SubscribersSubscribed, Tenant: "ten_b", Data: everyone})
		for topic, ids := range groups {
			recs = append(recs, eventlog.Record{Subject: eventlog.Subject("ten_b", eventlog.AggTopic, topic),
				Type: events.SubscribersSubscribed, Tenant: "ten_b",
				Data: events.SubscribersSubscribedData{TopicKey: topic, SubscriberIDs: ids}})
		}
		testnats.Append(b, l, recs)
	}
	st := timedCatchUp(b, l)
	if n, err := st.ResolveTopics("ten_b", []string{"everyone"}); err != nil || len(n) != b.N {
		b.Fatalf("everyone holds %d of %d: %v", len(n), b.N, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "subscribers/s")
}

// timedCatchUp opens a store on a fresh file and times its catch-up with
// l, the whole of which the benchmark measures.
func timedCatchUp(b *testing.B, l *eventlog.Log) *projections.Store {
	st := teststore.Open(b)
	b.ResetTimer()
	if err := st.CatchUp(context.Background(), l); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	return st
}
