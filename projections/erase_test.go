package projections_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
)

// Every store following the log applies an erasure: the subscriber is
// gone and its file, compacted, no longer holds its bytes, free pages
// included: an erasure must reach other processes' projections too, not
// only the store of the process that took the command.
func TestErasureAppliedByEveryStore(t *testing.T) {
	log := testnats.Log(t)
	dir := t.TempDir()
	a := teststore.RunningAt(t, log, filepath.Join(dir, "a.db"))
	b := teststore.RunningAt(t, log, filepath.Join(dir, "b.db"))
	ctx := context.Background()
	appendTenant(t, log, "ten_1")
	subject := eventlog.Subject("ten_1", eventlog.AggSubscriber, "u1")
	var seq uint64
	for i := range 3 {
		var err error
		seq, err = log.Append(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberUpserted, Tenant: "ten_1",
			Data: events.SubscriberUpsertedData{SubscriberID: "u1",
				Contacts: map[string][]string{"email": {fmt.Sprintf("zq9mark%d@x.io", i)}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []*projections.Store{a, b} {
		if err := st.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	seq, err := log.Append(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberErased, Tenant: "ten_1",
		Data: events.SubscriberErasedData{SubscriberID: "u1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*projections.Store{a, b} {
		if err := st.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Subscriber("ten_1", "u1"); err != projections.ErrNotFound {
			t.Fatalf("%s: erased subscriber read: %v", st.Path(), err)
		}
		data, err := os.ReadFile(st.Path())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "zq9mark") {
			t.Fatalf("%s still holds the erased contacts", st.Path())
		}
		if _, err := st.Tenant("ten_1"); err != nil {
			t.Fatalf("%s after compaction: %v", st.Path(), err)
		}
	}
}
