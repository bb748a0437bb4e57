package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nats-io/nats.go/jetstream"
)

// Append writes one event and returns its stream sequence. With
// rec.Expect it returns ErrConflict when the subject's last sequence is not
// rec.ExpectSeq. An event whose rec.MsgID was already stored returns the
// stored event's sequence and writes nothing.
//
// A record with a MsgID or an expectation is published again when its
// acknowledgement is lost (a cluster node stopped, a stream is electing a
// leader): the stream cannot store it twice. A plain record is published
// once; a lost acknowledgement is then an error although it may be stored.
func (l *Log) Append(ctx context.Context, rec Record) (uint64, error) {
	msg, err := rec.message()
	if err != nil {
		return 0, err
	}
	return l.appendMsg(ctx, rec, msg)
}

// appendMsg publishes msg, the message of rec.
func (l *Log) appendMsg(ctx context.Context, rec Record, msg *nats.Msg) (uint64, error) {
	ack, err := l.publish(ctx, msg, retryable(rec), publishOpts(rec))
	if err == nil {
		l.appended(rec.Type, ack)
		return ack.Sequence, nil
	}
	return l.appendFailure(ctx, rec, msg, err)
}

// retryable reports whether publishing rec again cannot store it twice.
func retryable(rec Record) bool { return rec.MsgID != "" || rec.Expect }

// AppendEach writes many events with asynchronous publishes, waits for
// every acknowledgement and reports each record's own outcome: errs[i] is
// nil when recs[i] was stored at seqs[i] (or was a duplicate of a stored
// event), ErrConflict when its expectation failed, another error (ctx's
// among them) when it could not be written. Records are independent: some
// may be stored while others fail, so callers make batches idempotent
// (MsgID, Expect).
func (l *Log) AppendEach(ctx context.Context, recs []Record) (seqs []uint64, errs []error) {
	seqs, errs = make([]uint64, len(recs)), make([]error, len(recs))
	futures := make([]jetstream.PubAckFuture, len(recs))
	msgs := make([]*nats.Msg, len(recs))
	for i, rec := range recs {
		msg, err := rec.message()
		if err != nil {
			errs[i] = err
			continue
		}
		msgs[i] = msg
		futures[i], errs[i] = l.publishAsync(ctx, msg, publishOpts(rec))
	}
	// A failed publish is settled by another round trip (a retry, or the
	// read of the subject's last event): those run side by side, a batch
	// of conflicts (a fan-out taken over after a crash finds every run of
	// its chunk started) costs a few round trips, not one per record.
	failed := make(chan int, len(recs))
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
			l.appended(recs[i].Type, ack)
		case err := <-f.Err():
			errs[i] = err
			failed <- i
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	close(failed)
	var wg sync.WaitGroup
	for range min(len(failed), settleParallel) {
		wg.Go(func() {
			for i := range failed {
				if retryable(recs[i]) && isLostAck(errs[i]) {
					// Ask again (the stream cannot store it twice), and
					// learn where it is stored.
					seqs[i], errs[i] = l.appendMsg(ctx, recs[i], msgs[i])
					continue
				}
				seqs[i], errs[i] = l.appendFailure(ctx, recs[i], msgs[i], errs[i])
			}
		})
	}
	wg.Wait()
	return seqs, errs
}

// settleParallel bounds the failed publishes of one AppendEach settled at
// once.
const settleParallel = 32

// publish publishes msg and waits for its acknowledgement. An idempotent
// message (one with a Msg-Id, which the stream de-duplicates) is published
// again when its acknowledgement is lost (see retrying).
func (l *Log) publish(ctx context.Context, msg *nats.Msg, idempotent bool, opts []jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if err := CheckSubject(msg.Subject, false); err != nil {
		return nil, err
	}
	if !idempotent {
		return l.js.PublishMsg(ctx, msg, opts...)
	}
	var ack *jetstream.PubAck
	err := l.retrying(ctx, func(ctx context.Context) (err error) {
		ack, err = l.js.PublishMsg(ctx, msg, opts...)
		return err
	})
	return ack, err
}

// appended reports a stored event to the Appended hook.
func (l *Log) appended(typ string, ack *jetstream.PubAck) {
	if l.cfg.Appended != nil && !ack.Duplicate {
		l.cfg.Appended(typ)
	}
}

// appendFailure classifies a failed append of msg. A conflict caused by
// the record's own earlier write (a retry after a lost acknowledgement: on
// R1 the server answers a conflict where R3 answers a duplicate) is no
// failure: the stored event's sequence is returned.
func (l *Log) appendFailure(ctx context.Context, rec Record, msg *nats.Msg, err error) (uint64, error) {
	if !isWrongLastSeq(err) {
		return 0, fmt.Errorf("eventlog: append %s: %w", rec.Type, err)
	}
	if last, lerr := l.lastMsg(ctx, rec.Subject); lerr == nil && ours(last, rec, msg) {
		return last.Sequence, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrConflict, rec.Subject)
}

// ours reports whether the stored message is the record's own: the same
// bytes (which hold the event's unique id), or the same MsgID.
func ours(stored *jetstream.RawStreamMsg, rec Record, msg *nats.Msg) bool {
	if bytes.Equal(stored.Data, msg.Data) {
		return true
	}
	if rec.MsgID == "" {
		return false
	}
	ev, err := decodeRaw(stored.Subject, stored.Sequence, stored.Data)
	return err == nil && ev.ID == rec.MsgID
}

// publishAsync publishes without waiting, pausing while too many
// acknowledgements are outstanding.
func (l *Log) publishAsync(ctx context.Context, msg *nats.Msg, opts []jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if err := CheckSubject(msg.Subject, false); err != nil {
		return nil, err
	}
	for {
		f, err := l.js.PublishMsgAsync(msg, opts...)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return f, err
		}
		select {
		case <-l.js.PublishAsyncComplete():
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// publishOpts are the headers of rec's publish. A conditional record's
// MsgID is not sent as a Msg-Id: its expectation already makes a repeat
// fail, and appendFailure recognises the stored event as ours by its id
// (the MsgID), so the stream need not remember the id for its duplicate
// window (one entry per run start and per delivery claim, ~150 bytes each,
// held for the whole window: 36 MB of a fan-out to 100,000).
func publishOpts(rec Record) []jetstream.PublishOpt {
	var opts []jetstream.PublishOpt
	if rec.MsgID != "" && !rec.Expect {
		opts = append(opts, jetstream.WithMsgID(rec.MsgID))
	}
	if rec.Expect {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(rec.ExpectSeq))
	}
	return opts
}
