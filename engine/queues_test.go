package engine

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type namedMsg struct {
	jetstream.Msg
	name string
}

func (namedMsg) InProgress() error { return nil }

func nameOf(m jetstream.Msg) string {
	if w, ok := m.(wokeMsg); ok {
		return "woke:" + nameOf(w.Msg)
	}
	return m.(namedMsg).name
}

// A worker takes due wakes first, then fired timers (both marked woke),
// then turns that stepped aside, then new work.
func TestQueuesTakeWakesFirstThenTimersThenLaterThenNew(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{}
	q := e.newQueues(ctx, 1)
	go func() { q.msgs <- namedMsg{name: "new"} }()
	go func() { q.timers <- namedMsg{name: "timer"} }()
	go q.wake(namedMsg{name: "wake"})
	// A turn that stepped aside goes back unmarked: it does not step
	// aside again.
	if !q.putLater(wokeMsg{namedMsg{name: "turn"}}) {
		t.Fatal("later queue refused its first message")
	}
	time.Sleep(200 * time.Millisecond) // every sender is blocked on its queue
	if got := e.wakesDue.Load(); got != 1 {
		t.Fatalf("wakes due %d, want 1", got)
	}
	var order []string
	for range 4 {
		m, ok := q.next()
		if !ok {
			t.Fatal("next ended early")
		}
		order = append(order, nameOf(m))
	}
	want := []string{"woke:wake", "woke:timer", "turn", "new"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	if got := e.wakesDue.Load(); got != 0 {
		t.Fatalf("wakes due %d after taking the wake, want 0", got)
	}
	cancel()
	if _, ok := q.next(); ok {
		t.Fatal("next returned after the context ended")
	}
}

// The later queue is bounded: when full, putLater says so (the caller
// gives the message back to the server).
func TestLaterQueueIsBounded(t *testing.T) {
	e := &Engine{}
	q := e.newQueues(context.Background(), 1)
	n := 0
	for q.putLater(namedMsg{name: "x"}) {
		if n++; n > 1000 {
			t.Fatal("the later queue never fills")
		}
	}
	if n != cap(q.later) {
		t.Fatalf("took %d, capacity %d", n, cap(q.later))
	}
}

func TestParseWake(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	tenant, run, got, err := parseWake([]byte(`{"tenant":"ten_1","run":"run_a.b","at":"2026-11-22T10:00:00.123456789Z"}`))
	if err != nil || tenant != "ten_1" || run != "run_a.b" || !got.Equal(at) {
		t.Fatalf("got %q %q %v %v", tenant, run, got, err)
	}
	for _, bad := range []string{``, `{}`, `not json`, `{"tenant":"t","run":"r"}`, `{"run":"r","at":"2026-11-22T10:00:00Z"}`} {
		if _, _, _, err := parseWake([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
