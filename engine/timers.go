package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/runstate"
)

// Timers fire in two stages. JetStream message schedules are durable but
// coarse: the server batches due schedules, and under load a fired timer
// can wait for its delivery. A run's durable timer is therefore armed
// lead early (see Engine.lead), on a subject and consumer of its own
// (eventlog.WorkWake); the turn it starts finds the wake less than 2×lead
// away and holds its work message, unacknowledged, in memory until the
// exact instant, then hands it to a worker ahead of any other work (see
// scheduler). A run due within 2×lead of its turn needs no durable timer:
// the turn holds its own work message the same way. A process that dies
// while holding a message leaves it unacknowledged: the server redelivers
// it after AckWait, to any process, so a crash delays such a wake but
// never loses it.

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

// lead is how early a run's durable timer fires: TimerLead, at most a sixth
// of AckWait, so that a message held up to 2×lead never outlives its
// acknowledgement deadline.
func (e *Engine) lead() time.Duration { return min(e.cfg.TimerLead, e.cfg.AckWait/6) }

// timerKind is how a run's next turn is brought about at an instant.
type timerKind int

// The kinds of timer.
const (
	// timerNow: the instant came: enqueue the next turn now.
	timerNow timerKind = iota
	// timerHold: the instant is at most 2×lead away: hold the current
	// work message in memory until it.
	timerHold
	// timerDurable: arm the run's one durable timer, lead before the
	// instant.
	timerDurable
)

// planTimer decides how a run's next turn happens at at, seen at now.
// It is pure.
func planTimer(at, now time.Time, lead time.Duration) timerKind {
	switch d := at.Sub(now); {
	case d <= 0:
		return timerNow
	case d <= 2*lead:
		return timerHold
	}
	return timerDurable
}

// timer makes the run's next turn happen at at (see planTimer): the turn
// yields after enqueueing it, holds its message until at, or is done once
// the durable timer is armed.
func (e *Engine) timer(ctx context.Context, st *runstate.State, at time.Time) (verdict, error) {
	lead := e.lead()
	switch planTimer(at, e.now(), lead) {
	case timerNow:
		return yielded, e.enqueue(ctx, st)
	case timerHold:
		return holdUntil(at), nil
	}
	data, err := json.Marshal(wake{Tenant: st.TenantID, Run: st.RunID, At: at.UTC()})
	if err != nil {
		return verdict{}, err
	}
	return finished, e.log.Schedule(ctx, eventlog.SchedSubject(st.TenantID, "run", st.RunID), eventlog.WorkWake, at.Add(-lead), data)
}

// enqueue asks for another turn of the run now.
func (e *Engine) enqueue(ctx context.Context, st *runstate.State) error {
	return e.log.Enqueue(ctx, eventlog.WorkRun(st.TenantID, st.RunID), nil, fmt.Sprintf("%s:%d", st.RunID, st.LastSeq))
}

// noteLate reports how late a woken run reaches its Bridge call after its
// instant due (unix nanoseconds), and marks wakes pressing past wakeSlack
// (see scheduler).
func (e *Engine) noteLate(due int64) {
	now := e.now().UnixNano()
	if e.cfg.WokeLate != nil {
		e.cfg.WokeLate(time.Duration(now - due))
	}
	e.pressure.note(now, due)
}
