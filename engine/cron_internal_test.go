package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/schedule"
	"github.com/nats-io/nats.go/jetstream"
)

// A tick handled late is followed by every instant the window still
// covers; ticks older than the window collapse into the one that fired.
func TestCronCatchUp(t *testing.T) {
	t.Parallel()
	everySecond, err := schedule.Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		at     time.Time
		window time.Duration
		want   time.Time // the next tick armed
	}{
		{"on time", now, time.Minute, now.Add(time.Second)},
		{"5s late under load", now.Add(-5 * time.Second), time.Minute, now.Add(-4 * time.Second)},
		{"late by a lost process's AckWait", now.Add(-30 * time.Second), time.Minute, now.Add(-29 * time.Second)},
		{"down an hour", now.Add(-time.Hour), time.Minute, now.Add(-59 * time.Second)},
		{"down an hour, wider window", now.Add(-time.Hour), 10 * time.Minute, now.Add(-599 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := everySecond.Next(catchUpFrom(tc.at, now, tc.window))
			if err != nil {
				t.Fatal(err)
			}
			if !next.Equal(tc.want) {
				t.Fatalf("next tick %v, want %v", next, tc.want)
			}
		})
	}
}

// A tick handled 5 s late starts the runs of the 5 instants it delayed at
// once, not one per handling, and arms the first instant still to come.
func TestLateTickStartsTheRunsOfTheInstantsItDelayed(t *testing.T) {
	t.Parallel()
	// The engine's clock reads an hour ahead of the server's: the tick it
	// arms (for its next second) stays on the stream, unfired, however
	// slowly a loaded machine gets to reading it.
	now := time.Now().UTC().Add(time.Hour).Truncate(time.Second).Add(300 * time.Millisecond)
	e, l, _ := newTestEngine(t, Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	const tenant, workflow, spec = "ten_cron", "beat", "* * * * * *"
	sched := spec
	if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggWorkflows, tenant),
		Type: events.WorkflowsSynced, Tenant: tenant,
		Data: events.WorkflowsSyncedData{Workflows: []events.SyncedWorkflow{{WorkflowID: workflow, Schedule: &sched}}}}); err != nil {
		t.Fatal(err)
	}
	late := now.Truncate(time.Second).Add(-5 * time.Second)
	data, _ := json.Marshal(tick{WorkflowID: workflow, Schedule: spec, At: late})
	if err := l.Enqueue(ctx, eventlog.WorkTick(tenant, workflow), data, "late-tick"); err != nil {
		t.Fatal(err)
	}
	cons := workConsumer(ctx, t, l, eventlog.WorkTick(tenant, workflow))
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.handleTick(ctx, msg); err != nil {
		t.Fatal(err)
	}
	var started []string
	err = l.Replay(ctx, eventlog.Filter{Tenant: tenant, Types: []string{events.TriggerAccepted}}, func(ev eventlog.Event) error {
		var d events.TriggerAcceptedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		started = append(started, d.TransactionID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for at := late; !at.After(now); at = at.Add(time.Second) {
		want = append(want, fmt.Sprintf("cron:%s:%s", workflow, at.Format(time.RFC3339Nano)))
	}
	if !slices.Equal(started, want) {
		t.Fatalf("runs started for %v, want %v", started, want)
	}
	armed, err := l.JetStream().Stream(ctx, eventlog.WorkStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := armed.GetLastMsgForSubject(ctx, cronSched(tenant, workflow))
	if err != nil {
		t.Fatal(err)
	}
	next := now.Truncate(time.Second).Add(time.Second)
	if got := last.Header.Get(jetstream.ScheduleHeader); got != "@at "+next.Format(time.RFC3339Nano) {
		t.Fatalf("armed %q, want the tick at %v", got, next)
	}
}
