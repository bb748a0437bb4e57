package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// A fan-out primes the state of the runs it starts only while the cache
// holds fewer than PrimeLimit states.
func TestPrimeStopsAtPrimeLimit(t *testing.T) {
	t.Parallel()
	e := New(Config{PrimeLimit: 3}, Deps{})
	for i := range 10 {
		id := fmt.Sprintf("run_%d", i)
		sub := "u"
		e.prime(eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggRun, id), Type: events.RunStarted,
			Tenant: "ten_1", At: time.Now(),
			Data: events.RunStartedData{RunID: id, TransactionID: "txn", WorkflowID: "wf", SubscriberID: &sub}}, uint64(i+1))
	}
	if got := e.states.size(); got != 3 {
		t.Fatalf("%d states primed, want 3", got)
	}
	if st := e.states.get("run_0"); st == nil || st.LastSeq != 1 || st.WorkflowID != "wf" {
		t.Fatalf("primed state %+v", st)
	}
}
