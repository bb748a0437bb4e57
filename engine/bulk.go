package engine

import (
	"context"
	"strings"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/nats-io/nats.go/jetstream"
)

// The bulk lane. A broadcast's fan-out enqueues its runs' first work on
// work.bulk.<tenant>.<run> rather than work.run: the runs consumer then
// never holds a broadcast's backlog, only the work of runs already under
// way (their next turns) and everyone's single triggers, signals and
// reruns. The bulk consumer hands a message to the runs' workers only once
// its tenant has room (fewer turns than TenantConcurrency, none parked),
// one message at a time: a tenant's million-run backlog waits on the
// server, not in memory and not in front of another tenant's trigger,
// whatever its size. Nothing caps it but the tenant's own pace: no count
// of parked messages, once reached, holds everyone's work back.
//
// Two broadcasting tenants share the lane in the order their chunks were
// enqueued: the one whose message is first waits for its own room, and
// the other's behind it wait too.
//
// The lane pulls bulkBatch messages ahead, so that a pull's round trip
// (to another node of a cluster) does not pace the broadcast; the one
// waiting for room is reported in progress every AckWait/3. One waiting in
// the client's buffer gets no report: if its tenant's turns are so slow
// that it waits past AckWait, the server delivers it again, and the turn
// it asks for is taken once (a repeat finds nothing to do).

// bulkBatch is the bulk lane's pull, and twice it the consumer's bound on
// unacknowledged messages.
const bulkBatch = 64

// bulkMsg is a bulk message as the runs consumer's would be: its subject
// is the run's work.run subject, so that every reader of a run's work
// (fairness, the start's wait, the turn, dead letters) reads it as such.
type bulkMsg struct {
	jetstream.Msg
	subject string
}

func (m bulkMsg) Subject() string { return m.subject }

// asRunWork returns m as runs work when it is bulk work.
func asRunWork(m jetstream.Msg) jetstream.Msg {
	if rest, ok := strings.CutPrefix(m.Subject(), eventlog.WorkBulkPrefix); ok {
		return bulkMsg{Msg: m, subject: eventlog.WorkRunPrefix + rest}
	}
	return m
}

// addBulk hands a broadcast run's first work (as runs work, asRunWork)
// to a worker once its tenant has room (see fair.waitTenant), or gives it
// back to the server when the engine stops first.
func (q *scheduler) addBulk(m jetstream.Msg) {
	if q.fair != nil {
		q.fair.waitTenant(q.ctx, tenantOf(job{msg: m}), m, q.progressEvery)
	}
	if q.ctx.Err() != nil {
		_ = m.Nak()
		return
	}
	q.offer(q.msgs, m)
}

// waitTenant blocks while tenant is at its limit or has work parked,
// until one of its turns ends or ctx ends, telling the server every every
// that m is still worked on.
func (f *fair) waitTenant(ctx context.Context, tenant string, m jetstream.Msg, every time.Duration) {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		f.mu.Lock()
		if f.active[tenant] < f.limitOf(tenant) && f.parked[tenant] == nil {
			f.mu.Unlock()
			return
		}
		if f.leftc == nil {
			f.leftc = make(chan struct{})
		}
		left := f.leftc
		f.mu.Unlock()
		select {
		case <-left:
		case <-tick:
			_ = m.InProgress()
		case <-ctx.Done():
			return
		}
	}
}
