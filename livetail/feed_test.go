package livetail_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/livetail"
)

// next waits for the listener's next event (the deadline only guards
// against a hang).
func next(t *testing.T, l *livetail.Listener) (eventlog.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-l.C:
		return ev, ok
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
		return eventlog.Event{}, false
	}
}

// TestListenersHearTheirTenantFromNowOn: a listener hears the events of
// its tenant appended after it registered, in order, and none of another
// tenant's; the tail stops with the last listener and starts again at the
// log's end with the next.
func TestListenersHearTheirTenantFromNowOn(t *testing.T) {
	log := testnats.Log(t)
	testnats.Append(t, log, []eventlog.Record{testnats.Subscriber("ten_a", "before")})
	f := livetail.New(log, livetail.Options{})
	defer f.Stop()
	ctx := context.Background()
	a, err := f.Listen(ctx, "ten_a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Listen(ctx, "ten_b")
	if err != nil {
		t.Fatal(err)
	}
	testnats.Append(t, log, []eventlog.Record{testnats.Subscriber("ten_b", "x"), testnats.Subscriber("ten_a", "one"),
		testnats.Subscriber("ten_a", "two")})
	var seqs []uint64
	for range 2 {
		ev, ok := next(t, a)
		if !ok || ev.TenantID != "ten_a" {
			t.Fatalf("tenant a heard %+v (open %v)", ev, ok)
		}
		seqs = append(seqs, ev.Seq)
	}
	if seqs[0] >= seqs[1] || seqs[0] <= 2 {
		t.Fatalf("tenant a heard sequences %v: want the two after its start, in order", seqs)
	}
	if ev, ok := next(t, b); !ok || ev.TenantID != "ten_b" {
		t.Fatalf("tenant b heard %+v", ev)
	}
	a.Close()
	b.Close()
	if _, ok := <-a.C; ok {
		t.Fatal("a closed listener's channel is open")
	}

	testnats.Append(t, log, []eventlog.Record{testnats.Subscriber("ten_a", "while nobody listens")})
	again, err := f.Listen(ctx, "ten_a")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	seq := testnats.Append(t, log, []eventlog.Record{testnats.Subscriber("ten_a", "three")})[0]
	if ev, ok := next(t, again); !ok || ev.Seq != seq {
		t.Fatalf("a new listener heard %+v (open %v), want the event appended after it, #%d", ev, ok, seq)
	}
}

// TestListenersAreBounded: the process's and each tenant's listeners are
// capped, and a listener that does not keep up is dropped, not waited for.
func TestListenersAreBounded(t *testing.T) {
	log := testnats.Log(t)
	f := livetail.New(log, livetail.Options{MaxListeners: 3, MaxPerTenant: 2, Buffer: 1})
	defer f.Stop()
	ctx := context.Background()
	slow, err := f.Listen(ctx, "ten_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Listen(ctx, "ten_a"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Listen(ctx, "ten_a"); !errors.Is(err, livetail.ErrTooManyForTenant) {
		t.Fatalf("a third listener of one tenant: %v", err)
	}
	if _, err := f.Listen(ctx, "ten_b"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Listen(ctx, "ten_c"); !errors.Is(err, livetail.ErrTooManyListeners) {
		t.Fatalf("a fourth listener of the process: %v", err)
	}
	testnats.Append(t, log, []eventlog.Record{testnats.Subscriber("ten_a", "1"), testnats.Subscriber("ten_a", "2"),
		testnats.Subscriber("ten_a", "3")})
	testwait.For(t, "a listener that reads nothing dropped", slow.Overflowed)
	if _, err := f.Listen(ctx, "ten_c"); err != nil {
		t.Fatalf("the place of a dropped listener is not free again: %v", err)
	}
}
