package eventlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
)

// payload is a ~500-byte event body, the size the architecture measured.
type payload struct {
	SubscriberID string              `json:"subscriberId"`
	Contacts     map[string][]string `json:"contacts"`
	Note         string              `json:"note"`
}

func benchRecord(i int) eventlog.Record {
	id := fmt.Sprintf("sub-%08d", i)
	return eventlog.Record{Subject: eventlog.Subject("ten_bench", eventlog.AggSubscriber, id), Type: "SubscriberUpserted",
		Tenant: "ten_bench", Data: payload{SubscriberID: id, Contacts: map[string][]string{"email": {id + "@example.com"}},
			Note: string(make([]byte, 380))}}
}

// BenchmarkAppendSync appends one event at a time and waits for each
// acknowledgement (file store, in-process server).
func BenchmarkAppendSync(b *testing.B) {
	l := testnats.Log(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(ctx, benchRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendConditional appends with the subject's expected sequence,
// as commands do.
func BenchmarkAppendConditional(b *testing.B) {
	l := testnats.Log(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := benchRecord(i)
		rec.Expect = true
		if _, err := l.Append(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAppendEach appends in batches of 1,000 with asynchronous
// publishes, as a fan-out does.
func BenchmarkAppendEach(b *testing.B) {
	l := testnats.Log(b)
	const batch = 1000
	recs := make([]eventlog.Record, batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		for j := range n {
			recs[j] = benchRecord(i + j)
		}
		testnats.Append(b, l, recs[:n])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
