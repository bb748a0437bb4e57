package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/schedule"
)

// Bounds of one sync.
const (
	// MaxSyncWorkflows bounds the workflows one sync records.
	MaxSyncWorkflows = 1000
	// MaxSyncSchedules bounds the cron schedules one sync arms.
	MaxSyncSchedules = 100
	// maxScheduleBytes bounds a schedule as a Bridge reports it.
	maxScheduleBytes = 256
)

// Workflow is one workflow of the tenant's last sync.
type Workflow struct {
	WorkflowID string
	// Schedule is the cron schedule of a schedule-triggered workflow,
	// nil for others.
	Schedule *string
	// NextRunAt is the schedule's next tick after now; nil without a
	// schedule.
	NextRunAt *time.Time
	// Critical and DefaultChannels are what the workflow declared about
	// preferences (DefaultChannels nil for none).
	Critical        bool
	DefaultChannels map[string]bool
	// Name and Description are the workflow's display text; empty for
	// none.
	Name, Description string
	// PayloadSchema is the JSON Schema a trigger's payload is checked
	// against; nil for none.
	PayloadSchema json.RawMessage
	// Controls are the JSON Schemas of the steps' controls, by step id;
	// nil for none.
	Controls map[string]json.RawMessage
}

// SyncResult is what a sync records, or would record.
type SyncResult struct {
	// Workflows are the workflows the Bridge serves, as recorded.
	Workflows []Workflow
	// Removed are the ids of the workflows of the last sync this one
	// drops, in that sync's order; empty when it drops none. A removed
	// workflow's schedule is disarmed; its unfinished runs fail at their
	// next turn, when the Bridge answers 404 workflow_not_found.
	Removed []string
}

// Sync asks the tenant's Bridge which workflows it serves, records them,
// and arms the cron schedules of the schedule-triggered ones (disarming
// schedules that changed or went away). A refused sync records nothing.
// With dryRun, it asks and checks the same and answers the same, but
// records and arms nothing.
//
// Errors: 409 bridge_not_configured; 502 bridge_unreachable or
// bridge_rejected when the Bridge gave no answer or refused; a
// *apierr.ValidationError whose code names what was wrong with the
// answer (apierr.CodeInvalidWorkflowID, apierr.CodeInvalidSchedule,
// apierr.CodeInvalidPayloadSchema, CodeTooMany…,
// apierr.CodeScheduleTooFrequent).
func (c *Control) Sync(ctx context.Context, tenant string, dryRun bool) (SyncResult, error) {
	url, secret, err := c.BridgeSecret(ctx, tenant)
	if errors.Is(err, apierr.ErrNotFound) {
		return SyncResult{}, errBridgeRequired
	}
	if err != nil {
		return SyncResult{}, err
	}
	infos, err := c.rt.Discover(ctx, url, secret)
	switch {
	case errors.Is(err, bridgeclient.ErrUnreachable):
		return SyncResult{}, apierr.New(apierr.CodeBridgeUnreachable, err.Error())
	case err != nil:
		return SyncResult{}, apierr.New(apierr.CodeBridgeRejected, err.Error())
	}
	synced, err := c.checkDiscovered(infos)
	if err != nil {
		return SyncResult{}, err
	}
	previous, err := c.synced(ctx, tenant)
	if err != nil {
		return SyncResult{}, err
	}
	res := SyncResult{Workflows: c.view(synced), Removed: removedBy(previous, synced)}
	if dryRun {
		return res, nil
	}
	seq, err := c.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggWorkflows, tenant),
		Type: events.WorkflowsSynced, Tenant: tenant, Data: events.WorkflowsSyncedData{Workflows: synced}})
	if err != nil {
		return SyncResult{}, err
	}
	if err := c.rt.ArmSchedules(ctx, tenant, previous, synced); err != nil {
		return SyncResult{}, err
	}
	if err := c.store.WaitFor(ctx, seq); err != nil {
		return SyncResult{}, err
	}
	return res, nil
}

// removedBy returns the ids of the workflows of previous that synced
// drops, in previous's order; an empty list when none.
func removedBy(previous, synced []events.SyncedWorkflow) []string {
	kept := make(map[string]bool, len(synced))
	for _, w := range synced {
		kept[w.WorkflowID] = true
	}
	removed := []string{}
	for _, w := range previous {
		if !kept[w.WorkflowID] {
			removed = append(removed, w.WorkflowID)
		}
	}
	return removed
}

// Workflows returns the tenant's last successful sync, with next run
// times computed now; none before the first.
func (c *Control) Workflows(ctx context.Context, tenant string) ([]Workflow, error) {
	wfs, err := c.synced(ctx, tenant)
	return c.view(wfs), err
}

func (c *Control) view(wfs []events.SyncedWorkflow) []Workflow {
	out := make([]Workflow, 0, len(wfs))
	now := c.now()
	for _, w := range wfs {
		v := Workflow{WorkflowID: w.WorkflowID, Schedule: w.Schedule, Critical: w.Critical, Name: w.Name, Description: w.Description, Controls: w.Controls}
		if len(w.PayloadSchema) > 0 && string(w.PayloadSchema) != "null" {
			v.PayloadSchema = w.PayloadSchema
		}
		if w.Preferences != nil {
			v.DefaultChannels = w.Preferences.Channels
		}
		if w.Schedule != nil {
			if sch, err := schedule.Parse(*w.Schedule); err == nil {
				if next, err := sch.Next(now); err == nil {
					v.NextRunAt = &next
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// synced reads the tenant's last sync from the log (authoritative for
// every process); nil when there was none.
func (c *Control) synced(ctx context.Context, tenant string) ([]events.SyncedWorkflow, error) {
	d, _, err := eventlog.LastAs[events.WorkflowsSyncedData](ctx, c.log, eventlog.Subject(tenant, eventlog.AggWorkflows, tenant))
	return d.Workflows, err
}

// checkDiscovered validates a Bridge's discover answer and returns it as
// a sync records it. A refusal is one *apierr.ValidationError whose code
// is that of the first check that failed, in this order: the counts
// (too_many_workflows, too_many_schedules), the schedules' frequency
// (schedule_too_frequent), then the ids and the schedules themselves, all
// problems listed (invalid_schedule when any schedule is bad, else
// invalid_payload_schema when a workflow's payloadSchema cannot be
// enforced (see checkPayloadSchema), else invalid_preferences when a
// workflow's default preferences name an unknown kind, else
// validation_failed when a name or description is out of bounds, else
// invalid_workflow_id). The schedule of a workflow with a bad id is
// checked only for its frequency.
func (c *Control) checkDiscovered(infos []wire.WorkflowInfo) ([]events.SyncedWorkflow, error) {
	if len(infos) > MaxSyncWorkflows {
		return nil, &apierr.ValidationError{Code: apierr.CodeTooManyWorkflows, Problems: []apierr.FieldProblem{{Field: "workflows",
			Problem: fmt.Sprintf("the Bridge reports %d workflows; a sync takes at most %d", len(infos), MaxSyncWorkflows)}}}
	}
	scheduled := 0
	for _, w := range infos {
		if w.Schedule != nil {
			scheduled++
		}
	}
	if scheduled > MaxSyncSchedules {
		return nil, &apierr.ValidationError{Code: apierr.CodeTooManySchedules, Problems: []apierr.FieldProblem{{Field: "workflows",
			Problem: fmt.Sprintf("the Bridge reports %d scheduled workflows; a sync arms at most %d", scheduled, MaxSyncSchedules)}}}
	}
	var p, frequent apierr.Problems
	code := apierr.CodeInvalidWorkflowID
	synced := make([]events.SyncedWorkflow, 0, len(infos))
	seen := map[string]bool{}
	now := c.now()
	for i, w := range infos {
		field := fmt.Sprintf("workflows[%d]", i)
		var sch schedule.Schedule
		var schErr error
		if w.Schedule != nil && len(*w.Schedule) <= maxScheduleBytes {
			sch, schErr = schedule.Parse(*w.Schedule)
			if schErr == nil {
				if gap, ok := sch.MinInterval(now); ok && gap < c.rtOpts.CronMinInterval {
					frequent.Add(field+".schedule", "workflow %q runs every %v; the minimum interval is %v",
						clip(w.WorkflowID, MaxWorkflowIDChars), gap, c.rtOpts.CronMinInterval)
				}
			}
		}
		if !wire.ValidWorkflowID(w.WorkflowID) || len(w.WorkflowID) > MaxWorkflowIDChars {
			p.Add(field+".workflowId", "%q does not match ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ (at most %d characters)",
				clip(w.WorkflowID, MaxWorkflowIDChars), MaxWorkflowIDChars)
			continue
		}
		if seen[w.WorkflowID] {
			p.Add(field+".workflowId", "%q is reported twice", w.WorkflowID)
		}
		seen[w.WorkflowID] = true
		if w.Schedule != nil {
			if len(*w.Schedule) > maxScheduleBytes {
				p.Add(field+".schedule", "is over %d bytes", maxScheduleBytes)
				code = apierr.CodeInvalidSchedule
			} else if schErr != nil {
				p.Add(field+".schedule", "%s", schErr.Error())
				code = apierr.CodeInvalidSchedule
			}
		}
		sw := events.SyncedWorkflow{WorkflowID: w.WorkflowID, Schedule: w.Schedule, PayloadSchema: w.PayloadSchema}
		var badText bool
		sw.Name, sw.Description, badText = checkDisplayText(&p, field, w)
		if badText && code == apierr.CodeInvalidWorkflowID {
			code = apierr.CodeValidationFailed
		}
		if len(w.PayloadSchema) > 0 && string(w.PayloadSchema) != "null" {
			if msg := checkPayloadSchema(w.PayloadSchema); msg != "" {
				p.Add(field+".payloadSchema", "%s", msg)
				if code == apierr.CodeInvalidWorkflowID || code == apierr.CodeValidationFailed || code == apierr.CodeInvalidPreferences {
					code = apierr.CodeInvalidPayloadSchema
				}
			}
		}
		if len(w.Controls) > 0 {
			if pp := checkControlSchemas(field, w.Controls); len(pp) > 0 {
				p = append(p, pp...)
				if code == apierr.CodeInvalidWorkflowID || code == apierr.CodeValidationFailed || code == apierr.CodeInvalidPreferences {
					code = apierr.CodeInvalidPayloadSchema
				}
			} else {
				sw.Controls = w.Controls
			}
		}
		if pp := checkWorkflowPreferences(&sw, field, w); len(pp) > 0 {
			p = append(p, pp...)
			if code == apierr.CodeInvalidWorkflowID || code == apierr.CodeValidationFailed {
				code = apierr.CodeInvalidPreferences
			}
		}
		synced = append(synced, sw)
	}
	if len(frequent) > 0 {
		return nil, &apierr.ValidationError{Code: apierr.CodeScheduleTooFrequent, Problems: frequent}
	}
	if len(p) > 0 {
		return nil, &apierr.ValidationError{Code: code, Problems: p}
	}
	return synced, nil
}

// clip shortens a string taken from a Bridge for a message.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Bounds of a workflow's display text, in characters (the Go SDK's
// bridge.MaxWorkflowName and MaxWorkflowDescription).
const (
	maxWorkflowName        = 100
	maxWorkflowDescription = 500
)

// checkDisplayText returns a discovered workflow's name and description,
// adding a problem to p for one that is over its bound, not UTF-8, or
// holds control characters (it is shown in pages and mails).
func checkDisplayText(p *apierr.Problems, field string, w wire.WorkflowInfo) (name, description string, bad bool) {
	for _, t := range []struct {
		field, v string
		max      int
	}{{".name", w.Name, maxWorkflowName}, {".description", w.Description, maxWorkflowDescription}} {
		if !utf8.ValidString(t.v) || utf8.RuneCountInString(t.v) > t.max || strings.ContainsFunc(t.v, unicode.IsControl) {
			bad = true
			p.Add(field+t.field, "must be at most %d characters of text, without control characters", t.max)
		}
	}
	return strings.TrimSpace(w.Name), strings.TrimSpace(w.Description), bad
}
