package projections_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
)

// TestInboxProjection: InAppMessageStored lands in its subscriber's inbox
// in order; an erasure of the subscriber deletes its messages, and only
// its own.
func TestInboxProjection(t *testing.T) {
	log := testnats.Log(t)
	st := running(t, log, filepath.Join(t.TempDir(), "p.db"))
	ctx := context.Background()
	appendTenant(t, log, "ten_1")
	store := func(sub, id, body string) uint64 {
		seq, err := log.Append(ctx, eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggInbox, sub),
			Type: events.InAppMessageStored, Tenant: "ten_1", MsgID: id,
			Data: events.InAppMessageStoredData{MessageID: id, SubscriberID: sub, RunID: "run_1", StepID: id,
				Content: json.RawMessage(`{"body":"` + body + `"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	store("u1", "msg_a", "zq7first")
	store("u2", "msg_b", "other")
	if err := st.WaitFor(ctx, store("u1", "msg_c", "zq7second")); err != nil {
		t.Fatal(err)
	}
	got, err := st.Inbox("ten_1", "u1")
	if err != nil || len(got) != 2 || got[0].MessageID != "msg_a" || got[1].MessageID != "msg_c" ||
		string(got[1].Content) != `{"body":"zq7second"}` || got[0].CreatedAt.IsZero() {
		t.Fatalf("inbox of u1 = %+v, %v", got, err)
	}
	seq, err := log.Append(ctx, eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggSubscriber, "u1"),
		Type: events.SubscriberErased, Tenant: "ten_1", Data: events.SubscriberErasedData{SubscriberID: "u1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Inbox("ten_1", "u1"); err != nil || len(got) != 0 {
		t.Fatalf("erased subscriber's inbox = %+v, %v", got, err)
	}
	if got, _ := st.Inbox("ten_1", "u2"); len(got) != 1 {
		t.Fatalf("another subscriber's inbox = %+v", got)
	}
	data, err := os.ReadFile(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "zq7first") {
		t.Fatal("the file still holds the erased messages")
	}
}
