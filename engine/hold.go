package engine

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Timers fire in two stages. JetStream message schedules are durable but
// coarse: the server batches due schedules at most every 250ms, so a
// population of timers fires up to a quarter of a second late. A run's
// durable timer is therefore armed lead early (see Engine.lead); the turn it
// starts finds the wake less than 2×lead away and holds its work message,
// unacknowledged, in memory until the exact instant, then hands it to a
// worker again. A process that dies while holding a message leaves it
// unacknowledged: the server redelivers it after AckWait, to any process,
// so a crash delays such a wake but never loses it.

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

// redeliverer returns the deliver function of a consumer's held messages:
// it queues m for the consumer's workers, or gives it back to the server
// when the engine stops first.
func redeliverer(ctx context.Context, msgs chan<- jetstream.Msg) func(jetstream.Msg) {
	return func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-ctx.Done():
			_ = m.Nak()
		}
	}
}
