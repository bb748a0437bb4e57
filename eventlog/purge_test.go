package eventlog_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
)

// A purge removes its subjects' events and the events at its sequences,
// and leaves the stream's last event one that is still there (its
// LogPurged, the only one kept), so that a reader waiting for the last
// event receives it.
func TestPurgeNeverRemovesTheLastEvent(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	add := func(id string) uint64 {
		seq, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggRun, id),
			Type: events.RunCompleted, Tenant: "ten_1", Data: events.RunCompletedData{}})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	add("kept")
	add("gone")
	one := add("one")
	add("gone")
	for range 2 {
		if err := l.Purge(ctx, []string{eventlog.Subject("ten_1", eventlog.AggRun, "gone")}, []uint64{one}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(id string) int {
		evs, err := l.History(ctx, eventlog.Subject("ten_1", eventlog.AggRun, id), 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	if count("gone") != 0 || count("one") != 0 || count("kept") != 1 {
		t.Fatalf("after the purge: gone %d, one %d, kept %d; want 0, 0, 1", count("gone"), count("one"), count("kept"))
	}
	marks, err := l.History(ctx, eventlog.LogSubject, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 1 || marks[0].Type != events.LogPurged || marks[0].Seq != last {
		t.Fatalf("the log's own events %+v, last seq %d: want one LogPurged, the last event", marks, last)
	}
}
