package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testwait"
)

// runMsg is a run's work message of a tenant, counting what the server is
// told about it.
type runMsg struct {
	jetstream.Msg
	subject           string
	progressed, naked *atomic.Int32
}

func newRunMsg(tenant, run string) runMsg {
	return runMsg{subject: eventlog.WorkRun(tenant, run), progressed: new(atomic.Int32), naked: new(atomic.Int32)}
}

func (m runMsg) Subject() string   { return m.subject }
func (m runMsg) Data() []byte      { return nil }
func (m runMsg) InProgress() error { m.progressed.Add(1); return nil }
func (m runMsg) Nak() error        { m.naked.Add(1); return nil }

// send offers m to the scheduler's new work as the consumer does.
func send(ctx context.Context, q *scheduler, m jetstream.Msg) {
	go func() {
		select {
		case q.msgs <- m:
		case <-ctx.Done():
		}
	}()
}

// fairScheduler is a scheduler of 16 workers with a fair share of limit
// turns a tenant and at most maxParked parked messages, working until
// the test ends.
func fairScheduler(t *testing.T, limit, maxParked int) (context.Context, *scheduler) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &Engine{}
	q := newScheduler(ctx, 16, &e.pressure)
	q.fair = newFair(limit, maxParked)
	return ctx, q
}

// nextLater asks for the next message as a worker does, and hands it
// over on the returned channel once it comes.
func nextLater(q *scheduler) <-chan jetstream.Msg {
	got := make(chan jetstream.Msg, 1)
	go func() {
		j, _ := q.next()
		got <- j.msg
	}()
	return got
}

// nextWithin takes the next message or fails after a while.
func nextWithin(t *testing.T, q *scheduler) jetstream.Msg {
	t.Helper()
	got := nextLater(q)
	select {
	case m := <-got:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message for the worker")
		return nil
	}
}

// A tenant at its limit does not hold the next worker: its message is
// parked and the worker takes another tenant's; when the tenant's turn
// ends, its parked messages come back oldest first.
func TestFairParksATenantAtItsLimit(t *testing.T) {
	t.Parallel()
	ctx, q := fairScheduler(t, 1, 0)
	a1, a2, a3, b1 := newRunMsg("ten_a", "r1"), newRunMsg("ten_a", "r2"), newRunMsg("ten_a", "r3"), newRunMsg("ten_b", "r1")

	send(ctx, q, a1)
	if m := nextWithin(t, q); m != jetstream.Msg(a1) {
		t.Fatalf("first: %v", m)
	}
	send(ctx, q, a2)
	time.Sleep(50 * time.Millisecond)
	send(ctx, q, a3)
	time.Sleep(50 * time.Millisecond)
	send(ctx, q, b1)
	// One worker call parks a2 and a3 and returns b1.
	if m := nextWithin(t, q); m != jetstream.Msg(b1) {
		t.Fatalf("while ten_a is at its limit a worker took %v, want ten_b's run", m.Subject())
	}
	if n := len(q.fair.waiting()); n != 2 {
		t.Fatalf("%d parked, want 2", n)
	}
	q.done(job{msg: b1})
	q.done(job{msg: a1})
	if m := nextWithin(t, q); m != jetstream.Msg(a2) {
		t.Fatalf("after ten_a's turn ended: %v, want its oldest parked run", m.Subject())
	}
	// ten_a is at its limit again with a2: a3 waits for a2's turn.
	got := nextLater(q)
	select {
	case m := <-got:
		t.Fatalf("took %v while ten_a was at its limit", m.Subject())
	case <-time.After(100 * time.Millisecond):
	}
	q.done(job{msg: a2})
	select {
	case m := <-got:
		if m != jetstream.Msg(a3) {
			t.Fatalf("took %v, want a3", m.Subject())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a3 never came back")
	}
	q.done(job{msg: a3})
	if len(q.fair.active) != 0 || len(q.fair.parked) != 0 || len(q.fair.ready) != 0 {
		t.Fatalf("fair not empty: %+v", q.fair)
	}
}

// Parked messages are kept alive with the server while they wait, and go
// back to it when the engine stops.
func TestFairKeepsParkedMessagesAliveAndGivesThemBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &Engine{}
	q := newScheduler(ctx, 16, &e.pressure)
	q.fair = newFair(1, 0)
	a1, a2 := newRunMsg("ten_a", "r1"), newRunMsg("ten_a", "r2")
	send(ctx, q, a1)
	nextWithin(t, q)
	send(ctx, q, a2)
	go func() { _, _ = q.next() }() // parks a2, then waits
	testwait.For(t, "a2 parked", func() bool { return len(q.fair.waiting()) != 0 })
	go q.fair.keepAlive(ctx, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	if n := a2.progressed.Load(); n < 3 {
		t.Fatalf("a parked message was kept alive %d times in 200ms at 20ms", n)
	}
	if a1.progressed.Load() != 0 {
		t.Fatal("the admitted message was touched")
	}
	cancel()
	e.drainFair(context.Background(), q)
	if a2.naked.Load() != 1 || len(q.fair.waiting()) != 0 {
		t.Fatalf("parked message naked %d times, %d still waiting", a2.naked.Load(), len(q.fair.waiting()))
	}
}

// The default cap is half the workers, at least one.
func TestTenantConcurrencyDefault(t *testing.T) {
	t.Parallel()
	for workers, want := range map[int]int{0: 64, 4: 2, 1: 1, 3: 1} {
		c := Config{Workers: workers}
		c.setDefaults()
		if c.TenantConcurrency != want {
			t.Errorf("workers %d: cap %d, want %d", workers, c.TenantConcurrency, want)
		}
	}
}

// A tenant's parked turn that stepped aside (it holds a Bridge answer to
// record) gets the tenant's next place before its older parked new work.
func TestFairFinishesAsideTurnsFirst(t *testing.T) {
	t.Parallel()
	f := newFair(1, 0)
	a1, a2 := newRunMsg("ten_a", "r1"), newRunMsg("ten_a", "r2")
	aside := job{msg: newRunMsg("ten_a", "r3"), aside: &turn{tenant: "ten_a"}}
	if !f.admit(job{msg: a1}) || f.admit(job{msg: a2}) || f.admit(aside) {
		t.Fatal("admitted past the cap")
	}
	f.leave(job{msg: a1})
	<-f.readyc
	if m, ok := f.takeReady(); !ok || m != aside {
		t.Fatalf("got %v, want the aside turn", m)
	}
	f.leave(aside)
	<-f.readyc
	if m, ok := f.takeReady(); !ok || m.msg != jetstream.Msg(a2) {
		t.Fatalf("got %v, want a2", m)
	}
}

// At maxParked parked messages the consumer takes no new work: add waits
// until a parked message is handed a place, then hands its message on.
func TestFairStopsTakingNewWorkAtMaxParked(t *testing.T) {
	t.Parallel()
	_, q := fairScheduler(t, 1, 2)
	a1, a2, a3, a4 := newRunMsg("ten_a", "r1"), newRunMsg("ten_a", "r2"), newRunMsg("ten_a", "r3"), newRunMsg("ten_a", "r4")
	go q.add(a1)
	if m := nextWithin(t, q); m != jetstream.Msg(a1) {
		t.Fatalf("first: %v", m)
	}
	// A worker parks a2 and a3, then waits for more.
	got := nextLater(q)
	q.add(a2)
	q.add(a3)
	testwait.For(t, "a2 and a3 parked", func() bool { return len(q.fair.waiting()) == 2 })
	added := make(chan struct{})
	go func() {
		q.add(a4)
		close(added)
	}()
	select {
	case <-added:
		t.Fatal("a4 was taken while two messages were parked")
	case m := <-got:
		t.Fatalf("a worker took %v while ten_a was at its limit", m.Subject())
	case <-time.After(100 * time.Millisecond):
	}
	// a1's turn ends: a2 takes its place, and there is room for a4.
	q.done(job{msg: a1})
	if m := <-got; m != jetstream.Msg(a2) {
		t.Fatalf("after a1: %v, want a2", m.Subject())
	}
	go func() { _, _ = q.next() }() // parks a4
	select {
	case <-added:
	case <-time.After(5 * time.Second):
		t.Fatal("a4 still waits with one message parked")
	}
	testwait.For(t, "a3 and a4 parked", func() bool { return len(q.fair.waiting()) == 2 })
}

// The bound on parked messages defaults to half of MaxAckPending.
func TestMaxParkedDefault(t *testing.T) {
	t.Parallel()
	c := Config{}
	c.setDefaults()
	if c.MaxParked != 16384 {
		t.Fatalf("MaxParked %d, want 16384", c.MaxParked)
	}
	c = Config{MaxAckPending: 100}
	c.setDefaults()
	if c.MaxParked != 50 {
		t.Fatalf("MaxParked %d with MaxAckPending 100, want 50", c.MaxParked)
	}
}
