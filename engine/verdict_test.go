package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
)

// tellMsg is a run's work message that records what the server is told.
type tellMsg struct {
	jetstream.Msg
	mu   *sync.Mutex
	told *[]string
}

func newTellMsg() tellMsg { return tellMsg{mu: new(sync.Mutex), told: new([]string)} }

func (m tellMsg) tell(s string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	*m.told = append(*m.told, s)
	return nil
}

func (m tellMsg) said() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), *m.told...)
}

func (m tellMsg) Subject() string                    { return eventlog.WorkRun("ten_1", "run_1") }
func (m tellMsg) Data() []byte                       { return nil }
func (m tellMsg) Ack() error                         { return m.tell("ack") }
func (m tellMsg) Nak() error                         { return m.tell("nak") }
func (m tellMsg) NakWithDelay(d time.Duration) error { return m.tell(fmt.Sprintf("nak %v", d)) }
func (m tellMsg) InProgress() error                  { return m.tell("progress") }

// TestSettleActsOnTheVerdict: each verdict becomes what the server is told
// of the work message, or where the scheduler keeps it; an error means a
// failure whatever the verdict.
func TestSettleActsOnTheVerdict(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	later := clock.Add(300 * time.Millisecond)
	cases := []struct {
		name      string
		v         verdict
		err       error
		stopped   bool // the work context ended
		scheduler bool
		told      []string
		// held: the message is held in memory; laterQ: the job waits in
		// the later queue.
		held, laterQ bool
	}{
		{name: "done", v: finished, told: []string{"ack"}},
		{name: "yield", v: yielded, told: []string{"ack"}},
		{name: "next (a step's, settled as done)", v: goOn, told: []string{"ack"}},
		{name: "retry", v: retryAt(later), told: []string{"nak 300ms"}},
		{name: "retry past", v: retryAt(clock.Add(-time.Second)), told: []string{"nak 0s"}},
		{name: "hold without a scheduler", v: holdUntil(later), told: []string{"nak 300ms"}},
		{name: "hold", v: holdUntil(later), scheduler: true, held: true},
		{name: "aside", v: steppedAside(&turn{tenant: "ten_1"}), scheduler: true, told: []string{"progress"}, laterQ: true},
		{name: "failure", v: finished, err: errors.New("log down"), told: []string{"nak 1s"}},
		{name: "failure while stopping", v: yielded, err: context.Canceled, stopped: true, told: []string{"nak 1s"}},
		{name: "failure of a hold", v: holdUntil(later), err: errors.New("log down"), scheduler: true, told: []string{"nak 1s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Now: func() time.Time { return clock }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				WorkRetryBase: time.Second}
			cfg.setDefaults()
			e := &Engine{cfg: cfg, logger: cfg.Logger}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var q *scheduler
			if c.scheduler {
				q = newScheduler(ctx, 4, &e.pressure)
			}
			work := ctx
			if c.stopped {
				stopped, stop := context.WithCancel(ctx)
				stop()
				work = stopped
			}
			m := newTellMsg()
			e.settle(work, job{msg: m}, c.v, c.err, q)
			if got := m.said(); fmt.Sprint(got) != fmt.Sprint(c.told) {
				t.Errorf("told the server %v, want %v", got, c.told)
			}
			if q == nil {
				return
			}
			q.held.mu.Lock()
			held := len(q.held.held)
			q.held.mu.Unlock()
			if (held == 1) != c.held {
				t.Errorf("%d messages held, want held %v", held, c.held)
			}
			if (len(q.later) == 1) != c.laterQ {
				t.Errorf("%d jobs in the later queue, want %v", len(q.later), c.laterQ)
			}
			if c.laterQ {
				j := <-q.later
				if j.aside != c.v.turn || j.woke || j.msg != jetstream.Msg(m) {
					t.Errorf("later job %+v, want the turn, not woke, with its message", j)
				}
			}
			q.release()
		})
	}
}

// TestPlanTimer: a run due now is enqueued, one due within 2×lead is
// held, a later one gets a durable timer.
func TestPlanTimer(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	const lead = 2 * time.Second
	cases := []struct {
		in   time.Duration
		want timerKind
	}{
		{-time.Hour, timerNow},
		{0, timerNow},
		{time.Nanosecond, timerHold},
		{lead, timerHold},
		{2 * lead, timerHold},
		{2*lead + time.Nanosecond, timerDurable},
		{time.Hour, timerDurable},
	}
	for _, c := range cases {
		if got := planTimer(now.Add(c.in), now, lead); got != c.want {
			t.Errorf("due in %v: %v, want %v", c.in, got, c.want)
		}
	}
}
