package inboxfeed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/inboxfeed"
	"github.com/heraldhq/herald/internal/testnats"
)

func appendInbox(t *testing.T, log *eventlog.Log, tenant, sub, typ string, data any) uint64 {
	t.Helper()
	seq, err := log.Append(context.Background(), eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggInbox, sub),
		Type: typ, Tenant: tenant, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func stored(t *testing.T, log *eventlog.Log, tenant, sub, id string) uint64 {
	return appendInbox(t, log, tenant, sub, events.InAppMessageStored,
		events.InAppMessageStoredData{MessageID: id, SubscriberID: sub, RunID: "run_1", StepID: id, Content: []byte(`{"body":"x"}`)})
}

func next(t *testing.T, l *inboxfeed.Listener) inboxfeed.Change {
	t.Helper()
	select {
	case c, ok := <-l.C:
		if !ok {
			t.Fatal("listener closed")
		}
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no change")
	}
	return inboxfeed.Change{}
}

// A listener gets its own subscriber's changes after the position Listen
// returned, in order, and no one else's.
func TestFeedDispatchesPerSubscriber(t *testing.T) {
	log := testnats.Log(t)
	before := stored(t, log, "ten_1", "ada", "msg_old")
	f, err := inboxfeed.Start(context.Background(), log, inboxfeed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	ada, pos, err := f.Listen("ten_1", "ada")
	if err != nil || pos < before {
		t.Fatalf("listen: pos %d (before %d), %v", pos, before, err)
	}
	other, _, _ := f.Listen("ten_2", "ada") // same id, another tenant
	stored(t, log, "ten_1", "bob", "msg_bob")
	s1 := stored(t, log, "ten_1", "ada", "msg_1")
	s2 := appendInbox(t, log, "ten_1", "ada", events.InboxMessagesMarked,
		events.InboxMessagesMarkedData{SubscriberID: "ada", Mark: events.MarkRead, MessageIDs: []string{"msg_1"}})
	c := next(t, ada)
	if c.Seq != s1 || c.Type != events.InAppMessageStored || c.Stored == nil || c.Stored.MessageID != "msg_1" || c.At.IsZero() {
		t.Fatalf("first change %+v", c)
	}
	if c := next(t, ada); c.Seq != s2 || c.Type != events.InboxMessagesMarked || c.Stored != nil {
		t.Fatalf("second change %+v", c)
	}
	select {
	case c := <-other.C:
		t.Fatalf("another tenant's listener got %+v", c)
	case <-time.After(100 * time.Millisecond):
	}
	// A later listener starts at the feed's position.
	if _, pos2, _ := f.Listen("ten_1", "ada"); pos2 < s2 {
		t.Fatalf("position %d after %d", pos2, s2)
	}
}

// Listen refuses beyond the bounds; a listener that does not keep up is
// dropped without holding up the others; Stop closes every listener.
func TestFeedBounds(t *testing.T) {
	log := testnats.Log(t)
	f, err := inboxfeed.Start(context.Background(), log, inboxfeed.Options{MaxListeners: 3, MaxPerSubscriber: 2, MaxPerTenant: 3, Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	slow, _, _ := f.Listen("ten_1", "ada")
	if _, _, err := f.Listen("ten_1", "ada"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Listen("ten_1", "ada"); !errors.Is(err, inboxfeed.ErrTooManyForSubscriber) {
		t.Fatalf("third of one subscriber: %v", err)
	}
	fast, _, err := f.Listen("ten_1", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Listen("ten_1", "cy"); !errors.Is(err, inboxfeed.ErrTooManyListeners) {
		t.Fatalf("fourth of the process: %v", err)
	}
	for i := range 4 {
		stored(t, log, "ten_1", "ada", "msg_"+string(rune('a'+i)))
	}
	last := stored(t, log, "ten_1", "bob", "msg_bob")
	if c := next(t, fast); c.Seq != last {
		t.Fatalf("bob's listener got %+v", c)
	}
	n := 0
	for range slow.C {
		n++
	}
	if n != 2 || !slow.Overflowed() {
		t.Fatalf("the slow listener got %d changes, overflowed %v", n, slow.Overflowed())
	}
	// Its place is free again.
	if _, _, err := f.Listen("ten_1", "cy"); err != nil {
		t.Fatalf("after the drop: %v", err)
	}
	f.Stop()
	if _, ok := <-fast.C; ok {
		t.Fatal("a listener outlived Stop")
	}
	fast.Close() // after Stop: harmless
	if _, _, err := f.Listen("ten_1", "dee"); !errors.Is(err, inboxfeed.ErrStopped) {
		t.Fatalf("listen after stop: %v", err)
	}
}

// TestFeedSharesThePoolAmongTenants: the subscribers of one tenant hold
// at most half of the process's listeners (by default), however
// many subscribers it has, so another tenant's streams still open; a
// place a tenant frees is its own again.
func TestFeedSharesThePoolAmongTenants(t *testing.T) {
	log := testnats.Log(t)
	f, err := inboxfeed.Start(context.Background(), log, inboxfeed.Options{MaxListeners: 16, MaxPerSubscriber: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	var greedy []*inboxfeed.Listener
	for i := range 8 { // 8 subscribers of one tenant, 2 streams each: the whole pool
		for range 2 {
			l, _, err := f.Listen("ten_big", fmt.Sprintf("sub%d", i))
			switch {
			case len(greedy) < 8 && err != nil:
				t.Fatalf("listener %d of the tenant: %v", len(greedy)+1, err)
			case len(greedy) >= 8 && !errors.Is(err, inboxfeed.ErrTooManyForTenant):
				t.Fatalf("listener beyond the tenant's share (it holds %d): %v", len(greedy), err)
			}
			if err == nil {
				greedy = append(greedy, l)
			}
		}
	}
	if len(greedy) != 8 {
		t.Fatalf("the tenant holds %d listeners, want 8 (half of 16)", len(greedy))
	}
	// Two other tenants take the rest; the pool is then full.
	for _, tenant := range []string{"ten_a", "ten_b"} {
		for i := range 4 {
			l, _, err := f.Listen(tenant, fmt.Sprintf("sub%d", i/2))
			if err != nil {
				t.Fatalf("%s, listener %d: %v", tenant, i+1, err)
			}
			defer l.Close()
		}
	}
	if _, _, err := f.Listen("ten_d", "sub0"); !errors.Is(err, inboxfeed.ErrTooManyListeners) {
		t.Fatalf("a full pool: %v", err)
	}
	greedy[0].Close()
	if _, _, err := f.Listen("ten_big", "sub7"); err != nil {
		t.Fatalf("a place the tenant freed: %v", err)
	}
}
