package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Work subjects. Each names what a worker must do; the consumers of the
// WORK stream filter on these prefixes.
const (
	WorkRunPrefix = "work.run."
	// WorkBulkPrefix carries the first work of a broadcast's runs: a lane
	// of its own, consumed only as fast as each tenant has room, so that
	// a tenant's million-run backlog waits on the server instead of in
	// front of other tenants' work (see the engine's bulk.go).
	WorkBulkPrefix   = "work.bulk."
	WorkFanoutPrefix = "work.fanout."
	WorkTickPrefix   = "work.tick."
	// WorkWake is the one subject every run's timer fires on; the message
	// names the run. A literal subject of its own keeps a fired timer's
	// delivery cheap: a consumer filtering on a wildcard over a stream of
	// thousands of distinct subjects (one per run) searches them for every
	// message it delivers, and falls seconds behind a burst of wakes.
	WorkWake = "work.wake"
)

// WorkRun returns the subject that asks a worker to advance one run.
func WorkRun(tenant, runID string) string { return WorkRunPrefix + tenant + "." + Token(runID) }

// WorkBulk returns the subject of a broadcast run's first work.
func WorkBulk(tenant, runID string) string { return WorkBulkPrefix + tenant + "." + Token(runID) }

// WorkFanout returns the subject that asks a worker to finish one fan-out.
func WorkFanout(tenant, txn string) string { return WorkFanoutPrefix + tenant + "." + Token(txn) }

// WorkTick returns the subject of a cron tick of one workflow.
func WorkTick(tenant, workflow string) string {
	return WorkTickPrefix + tenant + "." + Token(workflow)
}

// SchedSubject returns the schedule subject of one timer owner (a run, a
// digest window, a workflow's cron): each holds at most one pending
// schedule, so a new schedule replaces the old and a purge cancels it.
func SchedSubject(tenant, kind, id string) string {
	return "sched." + tenant + "." + kind + "." + Token(id)
}

// Enqueue publishes a work message now. A non-empty msgID de-duplicates
// repeats inside the window.
func (l *Log) Enqueue(ctx context.Context, subject string, data []byte, msgID string) error {
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	if _, err := l.publish(ctx, &nats.Msg{Subject: subject, Data: data}, msgID != "", opts); err != nil {
		return fmt.Errorf("eventlog: enqueue %s: %w", subject, err)
	}
	return nil
}

// Schedule arranges for data to be published on target at the instant at
// (to the nanosecond; an instant in the past fires at once). It replaces
// any schedule pending on schedSubject. The schedule is stored in the
// WORK stream and survives restarts.
func (l *Log) Schedule(ctx context.Context, schedSubject, target string, at time.Time, data []byte) error {
	if err := CheckSubject(target, false); err != nil {
		return fmt.Errorf("eventlog: schedule target: %w", err)
	}
	msg := &nats.Msg{Subject: schedSubject, Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.ScheduleHeader, "@at "+at.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.ScheduleTargetHeader, target)
	// Publishing a schedule again replaces it with itself: safe to retry.
	if _, err := l.publish(ctx, msg, true, nil); err != nil {
		return fmt.Errorf("eventlog: schedule %s: %w", schedSubject, err)
	}
	return nil
}

// Cancel removes the schedule pending on schedSubject, if any.
func (l *Log) Cancel(ctx context.Context, schedSubject string) error {
	if err := CheckSubject(schedSubject, false); err != nil {
		return fmt.Errorf("eventlog: cancel: %w", err)
	}
	err := l.retrying(ctx, func(ctx context.Context) error {
		return l.work.Purge(ctx, jetstream.WithPurgeSubject(schedSubject))
	})
	if err != nil {
		return fmt.Errorf("eventlog: cancel %s: %w", schedSubject, err)
	}
	return nil
}

// WorkMsg is one work message of a batch.
type WorkMsg struct {
	Subject string
	Data    []byte
	MsgID   string
}

// EnqueueBatch publishes many work messages and waits for every
// acknowledgement, returning the first failure.
func (l *Log) EnqueueBatch(ctx context.Context, msgs []WorkMsg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	sent := make([]WorkMsg, 0, len(msgs))
	for _, m := range msgs {
		var opts []jetstream.PublishOpt
		if m.MsgID != "" {
			opts = append(opts, jetstream.WithMsgID(m.MsgID))
		}
		f, err := l.publishAsync(ctx, &nats.Msg{Subject: m.Subject, Data: m.Data}, opts)
		if err != nil {
			return fmt.Errorf("eventlog: enqueue %s: %w", m.Subject, err)
		}
		futures = append(futures, f)
		sent = append(sent, m)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if m := sent[i]; m.MsgID != "" && isLostAck(err) {
				if err := l.Enqueue(ctx, m.Subject, m.Data, m.MsgID); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("eventlog: enqueue: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// KeepAlive tells the server every period that m, a message of a work
// consumer, is still being worked on, so that it is not delivered again
// while its handler runs longer than the consumer's AckWait; until the
// returned stop is called.
func KeepAlive(m jetstream.Msg, period time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = m.InProgress()
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
