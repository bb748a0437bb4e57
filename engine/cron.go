package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/schedule"
)

// tick is the body of a cron tick message.
type tick struct {
	WorkflowID string    `json:"workflowId"`
	Schedule   string    `json:"schedule"`
	At         time.Time `json:"at"`
}

func cronSched(tenant, workflow string) string {
	return eventlog.SchedSubject(tenant, "cron", workflow)
}

// ArmSchedules arms the schedule of every scheduled workflow of a sync
// (current) and disarms those of the previous sync that are gone or
// unscheduled. Arming replaces the pending tick, so it is safe to repeat.
func (e *Engine) ArmSchedules(ctx context.Context, tenant string, previous, current []events.SyncedWorkflow) error {
	keep := map[string]bool{}
	for _, w := range current {
		if w.Schedule == nil {
			continue
		}
		keep[w.WorkflowID] = true
		if err := e.arm(ctx, tenant, w.WorkflowID, *w.Schedule, e.now()); err != nil {
			return err
		}
	}
	for _, w := range previous {
		if w.Schedule != nil && !keep[w.WorkflowID] {
			if err := e.log.Cancel(ctx, cronSched(tenant, w.WorkflowID)); err != nil {
				return err
			}
		}
	}
	return nil
}

// arm schedules a workflow's next tick after t, replacing whatever tick
// was pending for it.
func (e *Engine) arm(ctx context.Context, tenant, workflow, spec string, after time.Time) error {
	sch, err := schedule.Parse(spec)
	if err != nil {
		return err
	}
	next, err := sch.Next(after)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(tick{WorkflowID: workflow, Schedule: spec, At: next})
	return e.log.Schedule(ctx, cronSched(tenant, workflow), eventlog.WorkTick(tenant, workflow), next, data)
}

// handleTick starts one run of a schedule-triggered workflow for a tick
// and arms the next. A tick of a schedule that a later sync changed or
// removed does nothing. The run's transaction id is derived from the tick
// instant, so a tick handled twice (redelivery, two processes) starts one
// run. A tick handled late (load, or a lost process's AckWait) also
// starts the runs of the instants after it that are already due and at
// most the catch-up window old (up to maxCatchUpRuns at a time), so no
// tick within the window is skipped however slowly ticks are handled. Of
// the ticks missed before the window (the service was down), only the
// first fires.
func (e *Engine) handleTick(ctx context.Context, m jetstream.Msg) error {
	tenant, workflow, err := parseWork(m.Subject(), eventlog.WorkTickPrefix)
	if err != nil {
		e.logger.Error("dropping malformed work message", "subject", m.Subject(), "err", err)
		return nil
	}
	var tk tick
	if err := json.Unmarshal(m.Data(), &tk); err != nil {
		e.logger.Error("dropping malformed tick", "subject", m.Subject(), "err", err)
		return nil
	}
	current, ok, err := e.currentSchedule(ctx, tenant, workflow)
	if err != nil {
		return err
	}
	if !ok || current != tk.Schedule {
		e.logger.Debug("stale tick ignored", "tenant", tenant, "workflow", workflow)
		return nil
	}
	if err := e.startCron(ctx, tenant, workflow, tk.At); err != nil {
		return err
	}
	sch, err := schedule.Parse(tk.Schedule)
	if err != nil {
		return err
	}
	now := e.now()
	last := catchUpFrom(tk.At, now, max(cronCatchUp, 2*e.cfg.AckWait))
	for range maxCatchUpRuns {
		next, err := sch.Next(last)
		if err != nil || next.After(now) {
			break
		}
		if err := e.startCron(ctx, tenant, workflow, next); err != nil {
			return err
		}
		last = next
	}
	// The next tick after the last started: in the future, or due at once
	// when more are still to catch up.
	if err := e.arm(ctx, tenant, workflow, tk.Schedule, last); err != nil {
		return err
	}
	// A sync may have changed the schedule while this tick was handled and
	// its arming been replaced by ours: put the current one back.
	if now, ok, err := e.currentSchedule(ctx, tenant, workflow); err == nil && (!ok || now != tk.Schedule) {
		if !ok {
			return e.log.Cancel(ctx, cronSched(tenant, workflow))
		}
		return e.arm(ctx, tenant, workflow, now, e.now())
	}
	return nil
}

// currentSchedule returns the workflow's schedule as of the last sync.
func (e *Engine) currentSchedule(ctx context.Context, tenant, workflow string) (string, bool, error) {
	wfs, err := e.synced(ctx, tenant)
	if err != nil {
		return "", false, err
	}
	for _, w := range wfs {
		if w.WorkflowID == workflow && w.Schedule != nil {
			return *w.Schedule, true, nil
		}
	}
	return "", false, nil
}

// startCron starts the run of one tick: a transaction with no
// subscriber and a run whose subscriber is null. Each write is
// idempotent, so a redelivered tick completes what a crash interrupted.
func (e *Engine) startCron(ctx context.Context, tenant, workflow string, at time.Time) error {
	txn := fmt.Sprintf("cron:%s:%s", workflow, at.UTC().Format(time.RFC3339Nano))
	_, err := e.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTransaction, txn),
		Type: events.TriggerAccepted, Tenant: tenant, Expect: true,
		Data: events.TriggerAcceptedData{TransactionID: txn, WorkflowID: workflow, Payload: json.RawMessage("{}"), Cron: true}})
	if err != nil && !errors.Is(err, eventlog.ErrConflict) {
		return err
	}
	runID := RunID(tenant, txn, "")
	rec := eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunStarted, Tenant: tenant,
		Expect: true, MsgID: runID + ":started", At: e.now().UTC(),
		Data: events.RunStartedData{RunID: runID, TransactionID: txn, WorkflowID: workflow}}
	seq, err := e.log.Append(ctx, rec)
	switch {
	case errors.Is(err, eventlog.ErrConflict):
		// This tick's run exists; its first work message may not (a crash
		// in between): enqueue again, a duplicate is harmless.
	case err != nil:
		return err
	default:
		e.prime(rec, seq)
		e.logger.Info("cron tick", "tenant", tenant, "workflow", workflow, "tick", at, "run", runID)
	}
	return e.log.Enqueue(ctx, eventlog.WorkRun(tenant, runID), nil, runID+":start")
}

// cronCatchUp is the least catch-up window: how old a missed tick may be
// and still fire. The window is at least twice the AckWait a lost
// process's tick waits out.
const cronCatchUp = time.Minute

// maxCatchUpRuns bounds the late instants one tick starts runs for; more
// are started by the next tick, armed due at once.
const maxCatchUpRuns = 100

// catchUpFrom is the instant after which the tick following one due at
// "at" is computed: "at" itself while it lies within the window before
// now, otherwise the start of the window.
func catchUpFrom(at, now time.Time, window time.Duration) time.Time {
	if from := now.Add(-window); at.Before(from) {
		return from
	}
	return at
}
