package engine

import (
	"context"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// broadcast fans out a broadcast (a trigger answered before its fan-out,
// see Broadcast) without holding its audience: the subscribers are read a
// chunk at a time, in key order, each chunk dispatched as fanout does,
// and nothing of the chunks before is kept. Where to go on is read from
// the transaction's last event, not its history:
//
//   - TriggerAccepted: from the first subscriber;
//   - NotificationsReceived (a chunk a crash cut short): from that chunk's
//     first subscriber, its started runs found started;
//   - NotificationsDispatched: after its last subscriber. Every fan-out
//     goes through the audience in key order, so the subscribers before
//     it were dispatched;
//   - FanoutCompleted: nothing left;
//   - anything else (a cancel): fanout, which reads the history.
//
// A subscriber who joins a topic before the chunk being read is not
// reached; one who joins after it is. The count the completion records is
// the audience's when the fan-out completes.
func (e *Engine) broadcast(ctx context.Context, tenant string, acc events.TriggerAcceptedData) error {
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	last, ok, err := e.log.Last(ctx, subject)
	if err != nil || !ok {
		return err
	}
	from := ""
	switch last.Type {
	case events.TriggerAccepted:
	case events.FanoutCompleted:
		return nil
	case events.NotificationsReceived:
		var d events.NotificationsReceivedData
		if err := last.Decode(&d); err != nil {
			return err
		}
		if len(d.SubscriberIDs) > 0 {
			from = d.SubscriberIDs[0]
		}
	case events.NotificationsDispatched:
		var d events.NotificationsDispatchedData
		if err := last.Decode(&d); err != nil {
			return err
		}
		if n := len(d.Runs); n > 0 {
			from = after(d.Runs[n-1].SubscriberID)
		}
	default:
		_, err := e.fanout(ctx, tenant, acc)
		return err
	}
	defer e.keepBackstop(ctx, tenant, acc.TransactionID)()
	if err := e.store.WaitCaughtUp(ctx, e.log); err != nil {
		return err
	}
	// A cancel's fan-out writes chunks after its cancellation: the last
	// event does not say the transaction is not cancelled. The
	// projections, caught up past it, do.
	w := &txnWatch{after: last.Seq}
	actor, cancelled, err := e.store.TransactionCancelled(tenant, acc.TransactionID)
	if err != nil {
		return err
	}
	if cancelled {
		w.cancelled = &events.TransactionCancelledData{TransactionID: acc.TransactionID, Actor: actor}
	}
	for {
		if err := e.waitBulkRoom(ctx); err != nil {
			return err
		}
		chunk, err := e.store.AudiencePage(tenant, acc.To.Topics, from, e.cfg.FanoutChunk)
		if err != nil {
			return err
		}
		if len(chunk) > 0 {
			if _, err := e.dispatch(ctx, tenant, acc, chunk, w); err != nil {
				return err
			}
		}
		if len(chunk) < e.cfg.FanoutChunk {
			break
		}
		from = after(chunk[len(chunk)-1])
	}
	n, err := e.store.CountAudience(tenant, acc.To.Topics, 0)
	if err != nil {
		return err
	}
	_, err = e.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.FanoutCompleted, Tenant: tenant,
		Data: events.FanoutCompletedData{Count: n}, MsgID: tenant + ":" + acc.TransactionID + ":fanout-completed"})
	return err
}

// bulkRoomPoll is how often a paused fan-out looks at the bulk lane again.
const bulkRoomPoll = 100 * time.Millisecond

// waitBulkRoom pauses a broadcast's fan-out while FanoutAhead runs or more
// wait on the bulk lane, not yet taken by any engine of the cluster, until
// fewer do or ctx ends.
//
// A fan-out writes its runs much faster than they are run (about 20,000
// a second against a thousand on two cores). Unpaced, a million-run
// broadcast spent its first minute starting runs, taking the cores from
// every other tenant's triggers meanwhile (BENCHMARKS.md), and its runs'
// first turns found their start long gone from the engine's state cache,
// to be read back from the log. Paced, it starts runs as the engines take
// them, a chunk at a time, always FanoutAhead ahead: the lane never runs
// dry, and the broadcast ends when it would have.
//
// The lane is read from the server: its count is every broadcast's
// together, and a count that cannot be read (the cluster electing a
// leader for the consumer) pauses nothing. Nor does a stopping engine:
// its fan-out goes on unpaced for the grace its turns have, then stops
// where a crash would.
func (e *Engine) waitBulkRoom(ctx context.Context) error {
	if e.workJS == nil {
		return nil
	}
	var tick *time.Ticker
	for {
		if e.stopping.Load() {
			return ctx.Err()
		}
		c, err := e.workJS.Consumer(ctx, eventlog.WorkStream, bulkConsumer)
		if err != nil || c.CachedInfo().NumPending < uint64(e.cfg.FanoutAhead) {
			return ctx.Err()
		}
		if tick == nil {
			tick = time.NewTicker(bulkRoomPoll)
			defer tick.Stop()
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// after is the least id greater than id: no id holds a zero byte.
func after(id string) string { return id + "\x00" }
