package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The wake scheduler hands one consumer's work messages to its workers,
// by priority:
//
//  1. a wake: a held message whose instant came (a run due now is late by
//     every turn queued ahead of it);
//  2. a fired timer (its turn mostly holds it again until its instant:
//     cheap, and late by whatever waits ahead of it);
//  3. a turn that stepped aside, to finish (finish runs before starting
//     new ones);
//  4. new work from the server.
//
// Order alone does not keep due runs on time: a burst of wakes arrives one
// at a time, so between two of them a worker finds the wake queue empty
// and starts other work, which takes the CPU the next wakes need. So
// while wakes press (a woken run reached its Bridge call more than
// wakeSlack after its instant, within the last wakeQuiet), at most calm
// workers run other work at once; the rest wait for wakes. And the spare
// workers (calm of them) never take other work: when every other worker
// waits on slow work, a wake still finds a worker.
//
// API: add and fire take messages from the consumer; hold keeps one in
// memory until its instant, then queues it as a wake; putLater queues a
// turn that stepped aside; next hands a worker its next job and done ends
// it; release gives the held messages back when the engine stops. With
// fair set, next also caps each tenant's turns at once (see fair.go).

const (
	// wakeSlack is how late a woken run may reach its Bridge call without
	// limiting other work: lateness the scheduler cannot improve on.
	wakeSlack = 5 * time.Millisecond
	// wakeQuiet is how long other work stays limited after a late wake:
	// longer than the gap between two wakes of one burst, so that a burst
	// keeps the limit on until it is over.
	wakeQuiet = 50 * time.Millisecond
	// spareShare: one worker in spareShare (at least one) is spare, and as
	// many may run other work while wakes press.
	spareShare = 16
	// laterPerWorker bounds the turns that stepped aside waiting per
	// worker; beyond, a turn finishes at once on its worker.
	laterPerWorker = 64
)

// job is a work message on its way to a worker, with what the scheduler
// knows of it.
type job struct {
	msg jetstream.Msg
	// woke: the message came as a wake or a fired timer; it holds no slot
	// for other work, and its turn steps aside after its first Bridge call.
	woke bool
	// due is when a wake's run came due (unix nanoseconds); zero for a
	// fired timer and for other work.
	due int64
	// aside, when set, is a turn that stepped aside: the job finishes it.
	aside *turn
}

// pressure is when a woken run was last late; every scheduler of an
// engine reads it.
type pressure struct{ last atomic.Int64 }

// note records that a woken run due at due reached its Bridge call at now
// (both unix nanoseconds), and marks wakes pressing when that is past
// wakeSlack.
func (p *pressure) note(now, due int64) {
	if now-due > int64(wakeSlack) {
		p.last.Store(now)
	}
}

// on reports whether wakes press at now (unix nanoseconds).
func (p *pressure) on(now int64) bool { return now-p.last.Load() < int64(wakeQuiet) }

// scheduler feeds one consumer's workers (see the top of this file).
type scheduler struct {
	ctx    context.Context
	msgs   chan jetstream.Msg
	timers chan jetstream.Msg
	wakes  chan job
	later  chan job
	held   holds
	press  *pressure
	// other counts the workers that took, or wait for, other work.
	other atomic.Int64
	calm  int64
	// slots holds a token for each worker on other work: all workers but
	// the spare ones.
	slots chan struct{}
	now   func() time.Time
	// fair, when set, caps each tenant's turns at once (see fair.go).
	fair *fair
	// progressEvery is how often a message waiting for its tenant's room
	// on the bulk lane is reported in progress (AckWait/3).
	progressEvery time.Duration
}

// newScheduler returns the scheduler of a consumer with workers workers;
// it stops handing out work when ctx ends.
func newScheduler(ctx context.Context, workers int, press *pressure) *scheduler {
	calm := max(1, workers/spareShare)
	return &scheduler{ctx: ctx, msgs: make(chan jetstream.Msg), timers: make(chan jetstream.Msg),
		wakes: make(chan job), later: make(chan job, laterPerWorker*workers),
		press: press, calm: int64(calm),
		slots: make(chan struct{}, max(1, workers-calm)), now: time.Now}
}

// add hands new work to a worker; it blocks until one takes it, or gives
// it back to the server (for another process now) when ctx ends. With
// fair set, it first waits while fair parks as many messages as it may.
func (q *scheduler) add(m jetstream.Msg) {
	if q.fair != nil {
		q.fair.waitRoom(q.ctx)
	}
	q.offer(q.msgs, m)
}

// fire hands a fired timer to a worker, ahead of other work (see add).
func (q *scheduler) fire(m jetstream.Msg) { q.offer(q.timers, m) }

func (q *scheduler) offer(into chan jetstream.Msg, m jetstream.Msg) {
	select {
	case into <- m:
	case <-q.ctx.Done():
		_ = m.Nak()
	}
}

// hold keeps m in memory, unacknowledged, for wait, then queues it as a
// wake.
func (q *scheduler) hold(m jetstream.Msg, wait time.Duration) { q.held.add(m, wait, q.wake) }

// release gives every message still held back to the server, due at its
// instant, for whichever process runs then.
func (q *scheduler) release() { q.held.release() }

// wake queues a held message whose instant came, or gives it back to the
// server when the engine stops first.
func (q *scheduler) wake(m jetstream.Msg) {
	select {
	case q.wakes <- job{msg: m, woke: true, due: q.now().UnixNano()}:
	case <-q.ctx.Done():
		_ = m.Nak()
	}
}

// putLater queues a turn that stepped aside after its Bridge call, telling
// the server its message is still worked on; false when the queue is
// full.
func (q *scheduler) putLater(j job) bool {
	_ = j.msg.InProgress()
	select {
	case q.later <- j:
		return true
	default:
		return false
	}
}

// next blocks for the next job by priority; false when the engine stops.
// The worker calls done with every job when its turn ends. With fair
// set, a job of a tenant at its limit is parked and the worker takes the
// next one.
func (q *scheduler) next() (job, bool) {
	for {
		j, admitted, ok := q.take()
		if !ok || q.fair == nil || admitted || q.fair.admit(j) {
			return j, ok
		}
		q.unslot(j)
	}
}

// done ends the worker's turn on j.
func (q *scheduler) done(j job) {
	q.unslot(j)
	if q.fair != nil {
		q.fair.leave(j)
	}
}

// pressing reports whether a woken run was late within wakeQuiet.
func (q *scheduler) pressing() bool { return q.press.on(q.now().UnixNano()) }

// reserve counts the worker as one on other work, unless wakes are
// pressing and calm workers already are.
func (q *scheduler) reserve() bool {
	for {
		n := q.other.Load()
		if n >= q.calm && q.pressing() {
			return false
		}
		if q.other.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// unslot gives back the slot a worker took for j, if any.
func (q *scheduler) unslot(j job) {
	if !j.woke {
		q.unreserve()
	}
}

// unreserve gives back a worker's count and slot for other work.
func (q *scheduler) unreserve() {
	q.other.Add(-1)
	<-q.slots
}

// take blocks for the next job by priority (see next); admitted: it is a
// parked job fair handed a place.
func (q *scheduler) take() (j job, admitted, ok bool) {
	j, parked, ok := q.takeNew()
	if parked {
		if j, ok = q.fair.takeReady(); !ok {
			q.unreserve()
			return q.take()
		}
		if j.woke {
			q.unreserve()
		}
		return j, true, true
	}
	return j, false, ok
}

// takeNew is take but for parked jobs: parked means fair's ready token
// was taken, with a slot.
func (q *scheduler) takeNew() (j job, parked, ok bool) {
	select {
	case j := <-q.wakes:
		return j, false, true
	default:
	}
	select {
	case m := <-q.timers:
		return job{msg: m, woke: true}, false, true
	default:
	}
	// A slot for other work; a wake or a timer meanwhile goes first.
	select {
	case j := <-q.wakes:
		return j, false, true
	case m := <-q.timers:
		return job{msg: m, woke: true}, false, true
	case q.slots <- struct{}{}:
	case <-q.ctx.Done():
		return job{}, false, false
	}
	for !q.reserve() {
		t := time.NewTimer(wakeQuiet / 10)
		select {
		case j := <-q.wakes:
			t.Stop()
			<-q.slots
			return j, false, true
		case m := <-q.timers:
			t.Stop()
			<-q.slots
			return job{msg: m, woke: true}, false, true
		case <-t.C:
		case <-q.ctx.Done():
			t.Stop()
			<-q.slots
			return job{}, false, false
		}
	}
	select {
	case j := <-q.later:
		return j, false, true
	default:
	}
	select {
	case j := <-q.wakes:
		q.unreserve()
		return j, false, true
	case m := <-q.timers:
		q.unreserve()
		return job{msg: m, woke: true}, false, true
	case j := <-q.later:
		return j, false, true
	case m := <-q.msgs:
		return job{msg: m}, false, true
	case <-q.readyc():
		return job{}, true, true
	case <-q.ctx.Done():
		q.unreserve()
		return job{}, false, false
	}
}

// readyc is fair's ready token; nil (never ready) without fair.
func (q *scheduler) readyc() chan struct{} {
	if q.fair == nil {
		return nil
	}
	return q.fair.readyc
}

// holds are the work messages held in memory until their instant.
type holds struct {
	mu   sync.Mutex
	held map[*heldMsg]struct{}
}

type heldMsg struct {
	msg   jetstream.Msg
	due   time.Time // on this process's clock
	timer *time.Timer
}

// add holds m for wait, then passes it to deliver (in a goroutine of its
// own; deliver may block). Until then release may give it back instead:
// m reaches exactly one of them.
func (h *holds) add(m jetstream.Msg, wait time.Duration, deliver func(jetstream.Msg)) {
	hm := &heldMsg{msg: m, due: time.Now().Add(wait)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = make(map[*heldMsg]struct{})
	}
	h.held[hm] = struct{}{}
	hm.timer = time.AfterFunc(wait, func() {
		h.mu.Lock()
		_, ok := h.held[hm]
		delete(h.held, hm)
		h.mu.Unlock()
		if ok {
			deliver(m)
		}
	})
}

// release gives every message still held back to the server, due at its
// instant.
func (h *holds) release() {
	h.mu.Lock()
	held := h.held
	h.held = nil
	h.mu.Unlock()
	for hm := range held {
		if hm.timer.Stop() {
			_ = hm.msg.NakWithDelay(max(0, time.Until(hm.due)))
		}
	}
}
