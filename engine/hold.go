package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Timers fire in two stages. JetStream message schedules are durable but
// coarse: the server batches due schedules at most every 250ms, so a
// population of timers fires up to a quarter of a second late, and under
// load a fired timer can wait seconds for its delivery. A run's durable
// timer is therefore armed lead early (see Engine.lead), on a subject and
// consumer of its own (eventlog.WorkWake); the turn it starts finds the
// wake less than 2×lead away and holds its work message, unacknowledged,
// in memory until the exact instant, then hands it to a worker ahead of
// any other work (see queues). A run due within 2×lead of its turn needs
// no durable timer: the turn holds its own work message the same way. A
// process that dies while holding a message leaves it unacknowledged: the
// server redelivers it after AckWait, to any process, so a crash delays
// such a wake but never loses it.

// wake is the message a run's timer fires on eventlog.WorkWake (see
// Engine.timer): the run, and the instant it is due.
type wake struct {
	Tenant string    `json:"tenant"`
	Run    string    `json:"run"`
	At     time.Time `json:"at"`
}

func parseWake(data []byte) (tenant, runID string, at time.Time, err error) {
	var w wake
	if err := json.Unmarshal(data, &w); err != nil {
		return "", "", time.Time{}, fmt.Errorf("engine: malformed wake: %w", err)
	}
	if w.Tenant == "" || w.Run == "" || w.At.IsZero() {
		return "", "", time.Time{}, fmt.Errorf("engine: wake without tenant, run or instant: %s", data)
	}
	return w.Tenant, w.Run, w.At, nil
}

// holdError ends a turn whose run is due again within 2×lead: the worker
// keeps the work message and redelivers it to itself at at.
type holdError struct{ at time.Time }

func (h *holdError) Error() string {
	return "engine: hold the work until " + h.at.Format(time.RFC3339Nano)
}

// lead is how early a run's durable timer fires: TimerLead, at most a sixth
// of AckWait so that a held message (held up to 2×lead) never outlives its
// acknowledgement deadline.
func (e *Engine) lead() time.Duration { return min(e.cfg.TimerLead, e.cfg.AckWait/6) }

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
// own; deliver may block).
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
// instant, for whichever process runs then.
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

// queues feed one consumer's workers. A worker takes, in this order: a
// held message whose instant came (a run due now is late by every turn
// queued ahead of it), a timer just fired (it is held: cheap, and late by
// whatever waits ahead of it), a turn that stepped aside for those (finish
// runs before starting new ones), new work from the server.
//
// Order alone does not keep due runs on time: a burst of wakes arrives one
// at a time, so between two of them a worker finds the wake queue empty
// and starts other work, and a hundred turns of other work take the CPU
// the next wakes need. So when a woken run reaches its Bridge call more
// than wakeSlack after its instant (Engine.noteLate), for wakeQuiet after
// it at most calm workers run other work at once; the rest wait for
// wakes. Wakes on time limit nothing. And a few workers (spare, a
// sixteenth) never take other work: when the others all wait on slow
// work (a slow Bridge, fsync'd appends), a wake still finds a worker.
type queues struct {
	ctx    context.Context
	msgs   chan jetstream.Msg
	timers chan jetstream.Msg
	wakes  chan dueMsg
	later  chan laterMsg
	// pressed is when a woken run was last late (see Engine.noteLate).
	pressed *atomic.Int64
	// other counts the workers that took, or wait for, other work.
	other atomic.Int64
	calm  int64
	// slots holds a token for each worker on other work: all workers but
	// the spare ones.
	slots chan struct{}
	now   func() time.Time
	// fair, when set, caps each tenant's turns at once (see fair.go).
	fair *fair
}

// dueMsg is a held message whose instant came at at (unix nanoseconds).
type dueMsg struct {
	m  jetstream.Msg
	at int64
}

const (
	// wakeSlack is how late a woken run may reach its Bridge call before
	// other work is limited.
	wakeSlack = 5 * time.Millisecond
	// wakeQuiet is how long other work stays limited after a late wake.
	wakeQuiet = 50 * time.Millisecond
)

func (e *Engine) newQueues(ctx context.Context, workers int) *queues {
	// As many spare workers as may run other work while wakes press.
	calm := max(1, workers/16)
	return &queues{ctx: ctx, msgs: make(chan jetstream.Msg), timers: make(chan jetstream.Msg),
		wakes: make(chan dueMsg), later: make(chan laterMsg, 64*workers),
		pressed: &e.pressed, calm: int64(calm),
		slots: make(chan struct{}, max(1, workers-calm)), now: time.Now}
}

// took hands a wake to its worker.
func (q *queues) took(d dueMsg) (jetstream.Msg, bool) {
	return wokeMsg{Msg: d.m, at: d.at}, true
}

// pressing reports whether a woken run was late within wakeQuiet.
func (q *queues) pressing() bool {
	return q.now().UnixNano()-q.pressed.Load() < int64(wakeQuiet)
}

// reserve counts the worker as one on other work, unless wakes are
// pressing and calm workers already are.
func (q *queues) reserve() bool {
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

// done ends the worker's turn on m (see next).
func (q *queues) done(m jetstream.Msg) {
	q.unslot(m)
	if q.fair != nil {
		q.fair.leave(m)
	}
}

// unslot gives back the slot a worker took for m, if any.
func (q *queues) unslot(m jetstream.Msg) {
	if _, ok := m.(wokeMsg); !ok {
		q.release()
	}
}

// release gives back a worker's count and slot for other work.
func (q *queues) release() {
	q.other.Add(-1)
	<-q.slots
}

// next blocks for the next message by priority; false when the engine
// stops. A message of the wake or timer queue comes as a wokeMsg; the
// worker calls done with every message when its turn ends. With fair set,
// a message of a tenant at its limit is parked and the worker takes the
// next one.
func (q *queues) next() (jetstream.Msg, bool) {
	for {
		m, admitted, ok := q.take()
		if !ok || q.fair == nil || admitted || q.fair.admit(m) {
			return m, ok
		}
		q.unslot(m)
	}
}

// take blocks for the next message by priority (see next); admitted: it
// is a parked message fair handed a place.
func (q *queues) take() (m jetstream.Msg, admitted, ok bool) {
	m, ok = q.takeNew()
	if m == nil && ok {
		if m, ok = q.fair.takeReady(); !ok {
			q.release()
			return q.take()
		}
		if _, woke := m.(wokeMsg); woke {
			q.release()
		}
		return m, true, true
	}
	return m, false, ok
}

// takeNew is take but for parked messages: a nil message with true means
// fair's ready token was taken, with a slot.
func (q *queues) takeNew() (jetstream.Msg, bool) {
	select {
	case d := <-q.wakes:
		return q.took(d)
	default:
	}
	select {
	case m := <-q.timers:
		return wokeMsg{Msg: m}, true
	default:
	}
	// A slot for other work; a wake or a timer meanwhile goes first.
	select {
	case d := <-q.wakes:
		return q.took(d)
	case m := <-q.timers:
		return wokeMsg{Msg: m}, true
	case q.slots <- struct{}{}:
	case <-q.ctx.Done():
		return nil, false
	}
	for !q.reserve() {
		t := time.NewTimer(wakeQuiet / 10)
		select {
		case d := <-q.wakes:
			t.Stop()
			<-q.slots
			return q.took(d)
		case m := <-q.timers:
			t.Stop()
			<-q.slots
			return wokeMsg{Msg: m}, true
		case <-t.C:
		case <-q.ctx.Done():
			t.Stop()
			<-q.slots
			return nil, false
		}
	}
	select {
	case m := <-q.later:
		return m, true
	default:
	}
	select {
	case d := <-q.wakes:
		q.release()
		return q.took(d)
	case m := <-q.timers:
		q.release()
		return wokeMsg{Msg: m}, true
	case m := <-q.later:
		return m, true
	case m := <-q.msgs:
		return m, true
	case <-q.readyc():
		return nil, true
	case <-q.ctx.Done():
		q.release()
		return nil, false
	}
}

// readyc is fair's ready token; nil (never ready) without fair.
func (q *queues) readyc() chan struct{} {
	if q.fair == nil {
		return nil
	}
	return q.fair.readyc
}

// wake queues a held message whose instant came, or gives it back to the
// server when the engine stops first.
func (q *queues) wake(m jetstream.Msg) {
	select {
	case q.wakes <- dueMsg{m: m, at: q.now().UnixNano()}:
	case <-q.ctx.Done():
		_ = m.Nak()
	}
}

// putLater queues a turn that stepped aside after its Bridge call, telling the
// server its message is still worked on; false when the queue is full.
func (q *queues) putLater(m laterMsg) bool {
	_ = m.InProgress()
	select {
	case q.later <- m:
		return true
	default:
		return false
	}
}

// laterMsg is the work message of a turn that stepped aside, with the turn.
type laterMsg struct {
	jetstream.Msg
	t *turn
}

// wokeMsg marks a work message that reached a worker through the wake or
// timer queue: a run held until its instant (at, unix nanoseconds), or a
// timer that fired (at zero). Its turn steps aside for other due runs
// after its first Bridge call.
type wokeMsg struct {
	jetstream.Msg
	at int64
}

// noteLate reports how late a woken run reaches its Bridge call after its
// instant at, and marks wakes pressing (see queues) past wakeSlack.
func (e *Engine) noteLate(at int64) {
	now := e.now().UnixNano()
	if e.cfg.WokeLate != nil {
		e.cfg.WokeLate(time.Duration(now - at))
	}
	if now-at > int64(wakeSlack) {
		e.pressed.Store(now)
	}
}
