package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/runstate"
)

// deadFixture is an engine on a real event log with a consumer of run
// work, to hand real work messages to settle.
type deadFixture struct {
	e    *Engine
	log  *eventlog.Log
	cons jetstream.Consumer
}

func newDeadFixture(t *testing.T, cfg Config) *deadFixture {
	t.Helper()
	l := testnats.Log(t)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cons, err := l.JetStream().CreateOrUpdateConsumer(context.Background(), eventlog.WorkStream, jetstream.ConsumerConfig{
		Durable: "test", FilterSubject: eventlog.WorkRunPrefix + ">", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return &deadFixture{e: New(cfg, Deps{Log: l}), log: l, cons: cons}
}

// start records a run and enqueues its work.
func (f *deadFixture) start(t *testing.T, tenant, runID string) {
	t.Helper()
	ctx := context.Background()
	sub := "u1"
	if _, err := f.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunStarted,
		Tenant: tenant, Data: events.RunStartedData{RunID: runID, TransactionID: "txn", WorkflowID: "wf", SubscriberID: &sub}}); err != nil {
		t.Fatal(err)
	}
	if err := f.log.Enqueue(ctx, eventlog.WorkRun(tenant, runID), nil, runID); err != nil {
		t.Fatal(err)
	}
}

// next fetches the next work message, waiting up to wait; nil when none came.
func (f *deadFixture) next(t *testing.T, wait time.Duration) jetstream.Msg {
	t.Helper()
	b, err := f.cons.Fetch(1, jetstream.FetchMaxWait(wait))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		return m
	}
	return nil
}

func (f *deadFixture) state(t *testing.T, tenant, runID string) *runstate.State {
	t.Helper()
	evs, err := f.log.History(context.Background(), eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := runstate.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A permanent append error (here the log's own refusal of a 5 MiB event)
// fails the run at once with invalid_step and its work is acked: it never
// comes back. On main it came back every second, forever.
func TestPermanentAppendErrorFailsTheRunAtOnce(t *testing.T) {
	t.Parallel()
	f := newDeadFixture(t, Config{})
	ctx := context.Background()
	f.start(t, "ten_1", "run_big")
	out, _ := json.Marshal(strings.Repeat("x", 5<<20))
	_, appendErr := f.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject("ten_1", eventlog.AggRun, "run_big"),
		Type: events.StepCompleted, Tenant: "ten_1", Data: events.StepCompletedData{StepID: "r", Type: "run", Output: out}})
	if appendErr == nil || !permanent(appendErr) {
		t.Fatalf("append of 5 MiB: %v, permanent %v", appendErr, permanent(appendErr))
	}
	m := f.next(t, 5*time.Second)
	if m == nil {
		t.Fatal("no work message")
	}
	f.e.settle(ctx, job{msg: m}, verdict{}, fmt.Errorf("engine: %w", appendErr), nil)
	st := f.state(t, "ten_1", "run_big")
	if st.Status != runstate.Failed || st.Error == nil || st.Error.Code != "invalid_step" || strings.Contains(st.Error.Message, "nats") {
		t.Fatalf("run %s %+v", st.Status, st.Error)
	}
	if m := f.next(t, 2*time.Second); m != nil {
		t.Fatalf("work came back: %s", m.Subject())
	}
}

// Work failing on an infrastructure error comes back after a growing
// pause, and after MaxWorkFailures in a row its run fails with
// infrastructure_exhausted (a dead letter visible in the run).
func TestInfrastructureFailuresAreBoundedThenTheRunFails(t *testing.T) {
	t.Parallel()
	f := newDeadFixture(t, Config{MaxWorkFailures: 3, WorkRetryBase: 100 * time.Millisecond, WorkRetryMax: 300 * time.Millisecond})
	ctx := context.Background()
	f.start(t, "ten_1", "run_flaky")
	transient := fmt.Errorf("eventlog: append: %w", nats.ErrTimeout)
	if permanent(transient) {
		t.Fatal("a timeout taken for permanent")
	}
	var gaps []time.Duration
	last := time.Now()
	for i := 1; i <= 3; i++ {
		m := f.next(t, 10*time.Second)
		if m == nil {
			t.Fatalf("delivery %d did not come", i)
		}
		if i > 1 {
			gaps = append(gaps, time.Since(last))
		}
		if st := f.state(t, "ten_1", "run_flaky"); st.Status != runstate.Running {
			t.Fatalf("delivery %d: run %s", i, st.Status)
		}
		f.e.settle(ctx, job{msg: m}, verdict{}, transient, nil)
		last = time.Now()
	}
	if gaps[0] < 80*time.Millisecond || gaps[1] < 180*time.Millisecond {
		t.Errorf("pauses %v, want ≥ 100ms then ≥ 200ms", gaps)
	}
	st := f.state(t, "ten_1", "run_flaky")
	if st.Status != runstate.Failed || st.Error == nil || st.Error.Code != apierr.CodeInfrastructureExhausted {
		t.Fatalf("run %s %+v", st.Status, st.Error)
	}
	if m := f.next(t, time.Second); m != nil {
		t.Fatalf("work came back: %s", m.Subject())
	}
}

func TestPermanentErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{nats.ErrMaxPayload, fmt.Errorf("x: %w", eventlog.ErrBadToken), jetstream.ErrStreamMessageExceedsMaximum} {
		if !permanent(err) {
			t.Errorf("%v not permanent", err)
		}
	}
	for _, err := range []error{nats.ErrTimeout, eventlog.ErrConflict, context.DeadlineExceeded, errors.New("x"), nats.ErrConnectionClosed} {
		if permanent(err) {
			t.Errorf("%v permanent", err)
		}
	}
}

// Work that is not a run's (here a cron tick) has no run to fail: past
// MaxWorkFailures it keeps coming back at the longest pause, and only a
// permanent error drops it.
func TestOtherWorkIsDroppedOnlyOnAPermanentError(t *testing.T) {
	t.Parallel()
	f := newDeadFixture(t, Config{MaxWorkFailures: 2, WorkRetryBase: 50 * time.Millisecond, WorkRetryMax: 100 * time.Millisecond})
	ctx := context.Background()
	cons, err := f.log.JetStream().CreateOrUpdateConsumer(ctx, eventlog.WorkStream, jetstream.ConsumerConfig{
		Durable: "ticks", FilterSubject: eventlog.WorkTickPrefix + ">", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	f.cons = cons
	if err := f.log.Enqueue(ctx, eventlog.WorkTick("ten_1", "daily"), []byte(`{}`), "tick"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		m := f.next(t, 5*time.Second)
		if m == nil {
			t.Fatalf("tick dropped after %d transient failures", i-1)
		}
		f.e.settle(ctx, job{msg: m}, verdict{}, nats.ErrTimeout, nil)
	}
	m := f.next(t, 5*time.Second)
	if m == nil {
		t.Fatal("tick dropped after transient failures")
	}
	f.e.settle(ctx, job{msg: m}, verdict{}, fmt.Errorf("x: %w", nats.ErrMaxPayload), nil)
	if m := f.next(t, time.Second); m != nil {
		t.Fatal("tick came back after a permanent error")
	}
}
