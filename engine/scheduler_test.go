package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type namedMsg struct {
	jetstream.Msg
	name string
}

func (namedMsg) InProgress() error { return nil }

// takesTheWake checks that who, a worker waiting for its next job on
// got, takes nothing until a wake comes (for 100 ms: a wrong take later
// would show in the job it takes), and then takes that wake.
func takesTheWake(t *testing.T, q *scheduler, got <-chan job, who string) {
	t.Helper()
	select {
	case m := <-got:
		t.Fatalf("%s took %s", who, nameOf(m))
	case <-time.After(100 * time.Millisecond):
	}
	go q.wake(namedMsg{name: "wake"})
	if m := <-got; nameOf(m) != "woke:wake" {
		t.Fatalf("%s took %s, want the wake", who, nameOf(m))
	}
}

func nameOf(j job) string {
	if j.woke {
		return "woke:" + j.msg.(namedMsg).name
	}
	return j.msg.(namedMsg).name
}

// A worker takes due wakes first, then fired timers (both woke), then
// turns that stepped aside, then new work.
func TestQueuesTakeWakesFirstThenTimersThenLaterThenNew(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{}
	q := newScheduler(ctx, 1, &e.pressure)
	go func() { q.msgs <- namedMsg{name: "new"} }()
	go func() { q.timers <- namedMsg{name: "timer"} }()
	go q.wake(namedMsg{name: "wake"})
	// A turn that stepped aside comes back unmarked: it does not step
	// aside again.
	if !q.putLater(job{msg: namedMsg{name: "turn"}, aside: &turn{}}) {
		t.Fatal("later queue refused its first message")
	}
	time.Sleep(200 * time.Millisecond) // every sender is blocked on its queue
	var order []string
	for range 4 {
		m, ok := q.next()
		if !ok {
			t.Fatal("next ended early")
		}
		order = append(order, nameOf(m))
		q.done(m)
	}
	want := []string{"woke:wake", "woke:timer", "turn", "new"}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	cancel()
	if _, ok := q.next(); ok {
		t.Fatal("next returned after the context ended")
	}
}

// A spare worker (a sixteenth) never takes other work: with every other
// worker on other work, the next one waits, and takes a wake when one
// comes due.
func TestSpareWorkersWaitForWakes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{}
	q := newScheduler(ctx, 16, &e.pressure)
	go func() {
		for i := 0; ; i++ {
			select {
			case q.msgs <- namedMsg{name: fmt.Sprintf("new%d", i)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var taken []job
	for range 15 {
		m, ok := q.next()
		if !ok || strings.HasPrefix(nameOf(m), "woke:") {
			t.Fatalf("took %v", nameOf(m))
		}
		taken = append(taken, m)
	}
	got := make(chan job, 1)
	go func() {
		m, _ := q.next()
		got <- m
	}()
	takesTheWake(t, q, got, "the spare worker")
	// A worker done with other work frees its slot.
	q.done(taken[0])
	if m, _ := q.next(); strings.HasPrefix(nameOf(m), "woke:") {
		t.Fatalf("took %s, want new work", nameOf(m))
	}
}

// The later queue is bounded: when full, putLater says so (the caller
// gives the message back to the server).
func TestLaterQueueIsBounded(t *testing.T) {
	t.Parallel()
	e := &Engine{}
	q := newScheduler(context.Background(), 1, &e.pressure)
	n := 0
	for q.putLater(job{msg: namedMsg{name: "x"}, aside: &turn{}}) {
		if n++; n > 1000 {
			t.Fatal("the later queue never fills")
		}
	}
	if n != cap(q.later) {
		t.Fatalf("took %d, capacity %d", n, cap(q.later))
	}
}

func TestParseWake(t *testing.T) {
	t.Parallel()
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

// Once a woken run reached its Bridge more than wakeSlack late, at most calm
// workers take other work (turns that stepped aside, new work); the others
// wait for wakes. wakeQuiet after the last late one, every worker takes
// other work again. Wakes on time limit nothing.
func TestOtherWorkWaitsWhileWakesArePressing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{}
	q := newScheduler(ctx, 16, &e.pressure)
	if q.calm != 1 {
		t.Fatalf("calm %d for 16 workers, want 1", q.calm)
	}
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixNano())
	q.now = func() time.Time { return time.Unix(0, clock.Load()) }
	go func() {
		for _, n := range []string{"new1", "new2", "new3", "new4"} {
			q.msgs <- namedMsg{name: n}
		}
	}()
	got := make(chan job, 1)
	take := func() {
		m, _ := q.next()
		got <- m
	}
	e.cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	// A wake on time limits nothing.
	go q.wake(namedMsg{name: "prompt"})
	time.Sleep(100 * time.Millisecond) // the wake is blocked on its queue
	m, _ := q.next()
	if nameOf(m) != "woke:prompt" || m.due != clock.Load() {
		t.Fatalf("took %s, want the wake due now", nameOf(m))
	}
	e.noteLate(m.due)
	first, _ := q.next()
	second, _ := q.next()
	if nameOf(first) != "new1" || nameOf(second) != "new2" {
		t.Fatalf("took %s, %s", nameOf(first), nameOf(second))
	}
	// A woken run that reaches its Bridge more than wakeSlack late
	// presses.
	clock.Add(int64(2 * wakeSlack))
	e.noteLate(m.due)
	q.done(first)
	go take()
	takesTheWake(t, q, got, "a worker, while wakes press and another runs other work,")
	// The other turn ends: one may run again.
	q.done(second)
	go take()
	if m := <-got; nameOf(m) != "new3" {
		t.Fatalf("took %s, want new3", nameOf(m))
	}
	// new3 still runs, yet wakeQuiet passed since a wake waited: no limit.
	clock.Add(int64(wakeQuiet))
	go take()
	select {
	case m := <-got:
		if nameOf(m) != "new4" {
			t.Fatalf("took %s, want new4", nameOf(m))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("other work still waits after the wakes stopped pressing")
	}
}

// TestPressure: a woken run late by more than wakeSlack makes wakes press
// for wakeQuiet; one on time, or late by wakeSlack at most, does not.
func TestPressure(t *testing.T) {
	t.Parallel()
	const at = int64(1_000_000_000_000)
	cases := []struct {
		name  string
		late  time.Duration // how late the woken run reached its Bridge
		after time.Duration // when pressing is asked, after that
		want  bool
	}{
		{"on time", 0, 0, false},
		{"late by the slack", wakeSlack, 0, false},
		{"late past the slack", wakeSlack + 1, 0, true},
		{"still quiet", 2 * wakeSlack, wakeQuiet - 1, true},
		{"quiet over", 2 * wakeSlack, wakeQuiet, false},
	}
	for _, c := range cases {
		var p pressure
		reached := at + int64(c.late)
		p.note(reached, at)
		if got := p.on(reached + int64(c.after)); got != c.want {
			t.Errorf("%s: pressing %v, want %v", c.name, got, c.want)
		}
	}
}

// A held message comes back as a wake at its instant, not before, due at
// the instant it was queued; a fired timer comes as woke with no instant.
func TestHoldWakesAtTheInstant(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var p pressure
	q := newScheduler(ctx, 4, &p)
	start := time.Now()
	q.hold(namedMsg{name: "held"}, 80*time.Millisecond)
	j, ok := q.next()
	if !ok || nameOf(j) != "woke:held" {
		t.Fatalf("took %v, want the held message as a wake", nameOf(j))
	}
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Fatalf("the wake came after %v, before its instant", el)
	}
	if due := time.Unix(0, j.due); due.Before(start.Add(80*time.Millisecond)) || time.Since(due) > time.Second {
		t.Fatalf("due %v, want the instant it was queued", due)
	}
	q.done(j)
	go q.fire(namedMsg{name: "timer"})
	if j, _ := q.next(); nameOf(j) != "woke:timer" || j.due != 0 || j.aside != nil {
		t.Fatalf("took %+v, want the fired timer, woke, with no instant", j)
	}
}

// release gives each held message back to the server, due at its
// instant, and it never comes as a wake after.
func TestReleaseGivesHeldMessagesBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var p pressure
	q := newScheduler(ctx, 4, &p)
	m := newTellMsg()
	q.hold(m, time.Hour)
	q.hold(namedMsg{name: "soon"}, 0) // its timer fires at once: not given back
	time.Sleep(50 * time.Millisecond)
	q.release()
	told := m.said()
	if len(told) != 1 || !strings.HasPrefix(told[0], "nak 59m") {
		t.Fatalf("told the server %v, want a nak due in about an hour", told)
	}
	if j, _ := q.next(); nameOf(j) != "woke:soon" {
		t.Fatalf("took %s, want the message whose instant came", nameOf(j))
	}
	got := make(chan job, 1)
	go func() {
		j, _ := q.next()
		got <- j
	}()
	select {
	case j := <-got:
		t.Fatalf("took %+v after release", j)
	case <-time.After(100 * time.Millisecond):
	}
}
