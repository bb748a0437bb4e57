package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones for CRON_TZ, whatever the host has

	"github.com/adhocore/gronx"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// WorkflowView is one workflow in the answers of sync and GET /v1/workflows.
type WorkflowView struct {
	WorkflowID string     `json:"workflowId"`
	Schedule   *string    `json:"schedule"`
	NextRunAt  *time.Time `json:"nextRunAt"`
}

// SyncResult is the answer to POST /v1/sync and GET /v1/workflows.
type SyncResult struct {
	Workflows []WorkflowView `json:"workflows"`
}

// Schedule is a parsed cron schedule: a gronx expression (5 fields, 6 with
// seconds first, or an @daily-style tag) and its time zone, given as an
// optional "CRON_TZ=Area/City " (or "TZ=") prefix; UTC by default.
type Schedule struct {
	Expr string
	Loc  *time.Location
}

// ParseSchedule parses a workflow's schedule.
func ParseSchedule(s string) (Schedule, error) {
	sch := Schedule{Expr: strings.TrimSpace(s), Loc: time.UTC}
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(sch.Expr, p); ok {
			zone, expr, _ := strings.Cut(rest, " ")
			loc, err := time.LoadLocation(zone)
			if err != nil {
				return Schedule{}, fmt.Errorf("unknown time zone %q", zone)
			}
			sch.Expr, sch.Loc = strings.TrimSpace(expr), loc
		}
	}
	if !gronx.IsValid(sch.Expr) {
		return Schedule{}, fmt.Errorf("%q is not a cron expression (5 fields, 6 with seconds first, or a tag like @daily)", sch.Expr)
	}
	return sch, nil
}

// Next returns the first tick strictly after t.
func (s Schedule) Next(t time.Time) (time.Time, error) {
	// gronx works in whole seconds: start from the second t is in, so the
	// tick at that second is not repeated.
	n, err := gronx.NextTickAfter(s.Expr, t.In(s.Loc).Truncate(time.Second), false)
	if err != nil {
		return time.Time{}, err
	}
	return n.UTC(), nil
}

// Sync asks the tenant's Bridge which workflows it serves, records them,
// and arms the cron schedules of the schedule-triggered ones (disarming
// schedules that changed or went away). A refused sync records nothing.
func (e *Engine) Sync(ctx context.Context, tenant string) (SyncResult, error) {
	url, secret, err := e.binding(ctx, tenant, true)
	if errors.Is(err, apierr.ErrNotFound) {
		return SyncResult{}, errBridgeNotConfigured
	}
	if err != nil {
		return SyncResult{}, err
	}
	infos, err := e.client.Discover(ctx, url, secret)
	switch {
	case errors.Is(err, bridgeclient.ErrUnreachable):
		return SyncResult{}, &apierr.Error{Kind: apierr.ErrUnavailable, Code: "bridge_unreachable", Message: err.Error()}
	case err != nil:
		return SyncResult{}, &apierr.Error{Kind: apierr.ErrUnavailable, Code: "bridge_rejected", Message: err.Error()}
	}
	if err := e.syncBounds(infos); err != nil {
		return SyncResult{}, err
	}
	var p apierr.Problems
	synced := make([]events.SyncedWorkflow, 0, len(infos))
	seen := map[string]bool{}
	for i, w := range infos {
		field := fmt.Sprintf("workflows[%d]", i)
		if !wire.ValidWorkflowID(w.WorkflowID) || len(w.WorkflowID) > MaxWorkflowIDChars {
			p.Add(field+".workflowId", "%q does not match ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ (at most %d characters)", clip(w.WorkflowID, MaxWorkflowIDChars), MaxWorkflowIDChars)
			continue
		}
		if seen[w.WorkflowID] {
			p.Add(field+".workflowId", "%q is reported twice", w.WorkflowID)
		}
		seen[w.WorkflowID] = true
		if w.Schedule != nil {
			if len(*w.Schedule) > maxScheduleBytes {
				p.Add(field+".schedule", "is over %d bytes", maxScheduleBytes)
			} else if _, err := ParseSchedule(*w.Schedule); err != nil {
				p.Add(field+".schedule", "%s", err.Error())
			}
		}
		synced = append(synced, events.SyncedWorkflow{WorkflowID: w.WorkflowID, Schedule: w.Schedule, PayloadSchema: w.PayloadSchema})
	}
	if err := p.Err(); err != nil {
		ve := err.(*apierr.ValidationError)
		ve.Code = "invalid_workflow_id"
		for _, pr := range ve.Problems {
			if strings.HasSuffix(pr.Field, ".schedule") {
				ve.Code = "invalid_schedule"
			}
		}
		return SyncResult{}, ve
	}
	previous, _, err := e.synced(ctx, tenant)
	if err != nil {
		return SyncResult{}, err
	}
	seq, err := e.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggWorkflows, tenant),
		Type: events.WorkflowsSynced, Tenant: tenant, Data: events.WorkflowsSyncedData{Workflows: synced}})
	if err != nil {
		return SyncResult{}, err
	}
	if err := e.armAll(ctx, tenant, previous, synced); err != nil {
		return SyncResult{}, err
	}
	if err := e.store.WaitFor(ctx, seq); err != nil {
		return SyncResult{}, err
	}
	return e.view(synced), nil
}

// Workflows answers GET /v1/workflows: the last successful sync, with next
// run times computed now.
func (e *Engine) Workflows(ctx context.Context, tenant string) (SyncResult, error) {
	wfs, _, err := e.synced(ctx, tenant)
	return e.view(wfs), err
}

func (e *Engine) view(wfs []events.SyncedWorkflow) SyncResult {
	res := SyncResult{Workflows: make([]WorkflowView, 0, len(wfs))}
	now := e.now()
	for _, w := range wfs {
		v := WorkflowView{WorkflowID: w.WorkflowID, Schedule: w.Schedule}
		if w.Schedule != nil {
			if sch, err := ParseSchedule(*w.Schedule); err == nil {
				if next, err := sch.Next(now); err == nil {
					v.NextRunAt = &next
				}
			}
		}
		res.Workflows = append(res.Workflows, v)
	}
	return res
}

// synced reads the tenant's last sync from the log (authoritative for
// every process); nil when there was none.
func (e *Engine) synced(ctx context.Context, tenant string) ([]events.SyncedWorkflow, uint64, error) {
	ev, ok, err := e.log.Last(ctx, eventlog.Subject(tenant, eventlog.AggWorkflows, tenant))
	if err != nil || !ok {
		return nil, 0, err
	}
	var d events.WorkflowsSyncedData
	if err := ev.Decode(&d); err != nil {
		return nil, 0, err
	}
	return d.Workflows, ev.Seq, nil
}

// Bounds of one sync.
const (
	// MaxSyncWorkflows bounds the workflows one sync records.
	MaxSyncWorkflows = 1000
	// MaxSyncSchedules bounds the cron schedules one sync arms.
	MaxSyncSchedules = 100
)

// Codes of a sync refused by a bound (422).
const (
	CodeTooManyWorkflows    = "too_many_workflows"
	CodeTooManySchedules    = "too_many_schedules"
	CodeScheduleTooFrequent = "schedule_too_frequent"
)

// syncBounds refuses a discover answer with more workflows or schedules
// than a sync takes, or a schedule ticking more often than
// Config.CronMinInterval (naming each such workflow).
func (e *Engine) syncBounds(infos []wire.WorkflowInfo) error {
	if len(infos) > MaxSyncWorkflows {
		return &apierr.ValidationError{Code: CodeTooManyWorkflows, Problems: []apierr.FieldProblem{{Field: "workflows",
			Problem: fmt.Sprintf("the Bridge reports %d workflows; a sync takes at most %d", len(infos), MaxSyncWorkflows)}}}
	}
	scheduled := 0
	for _, w := range infos {
		if w.Schedule != nil {
			scheduled++
		}
	}
	if scheduled > MaxSyncSchedules {
		return &apierr.ValidationError{Code: CodeTooManySchedules, Problems: []apierr.FieldProblem{{Field: "workflows",
			Problem: fmt.Sprintf("the Bridge reports %d scheduled workflows; a sync arms at most %d", scheduled, MaxSyncSchedules)}}}
	}
	var p apierr.Problems
	for i, w := range infos {
		if w.Schedule == nil {
			continue
		}
		if len(*w.Schedule) > maxScheduleBytes {
			continue // reported with the other problems of the sync
		}
		sch, err := ParseSchedule(*w.Schedule)
		if err != nil {
			continue
		}
		if gap, ok := sch.minInterval(e.now()); ok && gap < e.cfg.CronMinInterval {
			p.Add(fmt.Sprintf("workflows[%d].schedule", i), "workflow %q runs every %v; the minimum interval is %v",
				clip(w.WorkflowID, MaxWorkflowIDChars), gap, e.cfg.CronMinInterval)
		}
	}
	if err := p.Err(); err != nil {
		ve := err.(*apierr.ValidationError)
		ve.Code = CodeScheduleTooFrequent
		return ve
	}
	return nil
}

// maxScheduleBytes bounds a schedule as a Bridge reports it.
const maxScheduleBytes = 256

// intervalSamples is how many consecutive ticks minInterval compares.
const intervalSamples = 32

// minInterval returns the shortest gap between consecutive ticks of s
// among the intervalSamples ticks after from; false when s ticks less
// than twice.
func (s Schedule) minInterval(from time.Time) (time.Duration, bool) {
	var gap time.Duration
	found := false
	prev, err := s.Next(from)
	if err != nil {
		return 0, false
	}
	for range intervalSamples {
		next, err := s.Next(prev)
		if err != nil {
			break
		}
		if d := next.Sub(prev); !found || d < gap {
			gap, found = d, true
		}
		prev = next
	}
	return gap, found
}

// clip shortens a string taken from a Bridge for a message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
