package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestInboxProjection: InAppMessageStored lands in its subscriber's inbox
// in order; an erasure of the subscriber deletes its messages, and only
// its own.
func TestInboxProjection(t *testing.T) {
	log, st := followed(t)
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
	if c, err := st.InboxCounts("ten_1", "u1"); err != nil || c != (projections.InboxCounts{}) {
		t.Fatalf("erased subscriber's counts = %+v, %v", c, err)
	}
	if _, err := st.InboxMessage("ten_1", "u1", "msg_a"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("erased subscriber's message: %v", err)
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

// TestInboxStateAndCounts: marks change only what they name and keep the
// counts (read implies seen; archived counts in neither); a full inbox
// drops its oldest message with its share of the counts; a rebuild from
// the log gives the same bytes.
func TestInboxStateAndCounts(t *testing.T) {
	dir := t.TempDir()
	log, st := followedAt(t, filepath.Join(dir, "p.db"))
	ctx := context.Background()
	appendTenant(t, log, "ten_1")
	var last uint64
	put := func(typ string, data any) {
		t.Helper()
		seq, err := log.Append(ctx, eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggInbox, "u1"),
			Type: typ, Tenant: "ten_1", Data: data})
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	store := func(id string) {
		put(events.InAppMessageStored, events.InAppMessageStoredData{MessageID: id, SubscriberID: "u1", RunID: "run_1",
			StepID: id, Content: json.RawMessage(`{"body":"b"}`)})
	}
	mark := func(kind string, ids ...string) {
		put(events.InboxMessagesMarked, events.InboxMessagesMarkedData{SubscriberID: "u1", Mark: kind, MessageIDs: ids})
	}
	counts := func(unread, unseen, total int) {
		t.Helper()
		if err := st.WaitFor(ctx, last); err != nil {
			t.Fatal(err)
		}
		c, err := st.InboxCounts("ten_1", "u1")
		if err != nil || c != (projections.InboxCounts{Unread: unread, Unseen: unseen, Total: total}) {
			t.Fatalf("counts %+v (%v), want unread %d unseen %d total %d", c, err, unread, unseen, total)
		}
	}
	store("a")
	store("b")
	store("c")
	store("a") // a repeat outside the dedupe window: stored once
	counts(3, 3, 3)
	mark(events.MarkRead, "a")
	counts(2, 2, 3)
	mark(events.MarkSeen, "b")
	counts(2, 1, 3)
	mark(events.MarkArchived, "c", "zzz") // an unknown id is ignored
	counts(1, 0, 2+1)
	mark(events.MarkUnread, "a")
	counts(2, 0, 3)
	mark(events.MarkUnarchived, "c")
	counts(3, 1, 3)
	a, err := st.InboxMessage("ten_1", "u1", "a")
	if err != nil || a.SeenAt == nil || a.ReadAt != nil {
		t.Fatalf("a: %+v, %v", a, err)
	}
	if _, err := st.InboxMessage("ten_1", "u2", "a"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("another subscriber's message: %v", err)
	}
	for i := range projections.MaxInboxMessages {
		store(fmt.Sprintf("m%04d", i))
	}
	// a, b, c are the oldest three: dropped, with their counts.
	counts(projections.MaxInboxMessages, projections.MaxInboxMessages, projections.MaxInboxMessages)
	if _, err := st.InboxMessage("ten_1", "u1", "a"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("the oldest message stays in a full inbox: %v", err)
	}
	page, next, err := st.InboxMessages("ten_1", "u1", projections.InboxUnread, projections.Page{Limit: 2})
	if err != nil || len(page) != 2 || page[0].MessageID != "m0999" || page[1].MessageID != "m0998" || next == "" {
		t.Fatalf("newest first: %+v %q %v", page, next, err)
	}
	checkRebuild(t, log, st)
}
