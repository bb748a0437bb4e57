package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nats-io/nats.go/jetstream"
)

// Append writes one event and returns its stream sequence. With
// rec.Expect it returns ErrConflict when the subject's last sequence is not
// rec.ExpectSeq. An event whose rec.MsgID was already stored returns the
// stored event's sequence and writes nothing.
func (l *Log) Append(ctx context.Context, rec Record) (uint64, error) {
	msg, err := rec.message()
	if err != nil {
		return 0, err
	}
	ack, err := l.js.PublishMsg(ctx, msg, publishOpts(rec)...)
	if err == nil {
		return ack.Sequence, nil
	}
	// A retry after a lost ack: on R1 the server answers a conflict where
	// R3 answers a duplicate; appendFailure looks at the stored id first.
	if err := l.appendFailure(ctx, rec, err); err != nil {
		return 0, err
	}
	last, _, err := l.Last(ctx, rec.Subject)
	return last.Seq, err
}

// AppendBatch writes many events with asynchronous publishes and waits for
// every acknowledgement. It returns the sequences in the order of recs and
// the first failure, if any: some events may then have been written, so
// callers make batches idempotent (MsgID, Expect). A conflict is reported
// as ErrConflict.
func (l *Log) AppendBatch(ctx context.Context, recs []Record) ([]uint64, error) {
	seqs, errs := l.AppendEach(ctx, recs)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	for _, err := range errs {
		if err != nil {
			return seqs, err
		}
	}
	return seqs, nil
}

// AppendEach is AppendBatch reporting each record's own outcome: errs[i]
// is nil when recs[i] was stored at seqs[i] (or was a duplicate of a stored
// event), ErrConflict when its expectation failed, another error when it
// could not be written.
func (l *Log) AppendEach(ctx context.Context, recs []Record) (seqs []uint64, errs []error) {
	seqs, errs = make([]uint64, len(recs)), make([]error, len(recs))
	futures := make([]jetstream.PubAckFuture, len(recs))
	for i, rec := range recs {
		msg, err := rec.message()
		if err != nil {
			errs[i] = err
			continue
		}
		futures[i], errs[i] = l.publishAsync(ctx, msg, publishOpts(rec))
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			errs[i] = l.appendFailure(ctx, recs[i], err)
			if errs[i] == nil {
				// A retried conditional append already stored: find it.
				if last, ok, lerr := l.Last(ctx, recs[i].Subject); lerr == nil && ok {
					seqs[i] = last.Seq
				}
			}
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	return seqs, errs
}

// appendFailure classifies a failed append; nil means the record is in
// fact stored (a conflict caused by the record's own earlier write).
func (l *Log) appendFailure(ctx context.Context, rec Record, err error) error {
	if !isWrongLastSeq(err) {
		return fmt.Errorf("eventlog: append %s: %w", rec.Type, err)
	}
	if rec.MsgID != "" {
		if last, ok, lerr := l.Last(ctx, rec.Subject); lerr == nil && ok && last.ID == rec.MsgID {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrConflict, rec.Subject)
}

// publishAsync publishes without waiting, pausing while too many
// acknowledgements are outstanding.
func (l *Log) publishAsync(ctx context.Context, msg *nats.Msg, opts []jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
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

func publishOpts(rec Record) []jetstream.PublishOpt {
	var opts []jetstream.PublishOpt
	if rec.MsgID != "" {
		opts = append(opts, jetstream.WithMsgID(rec.MsgID))
	}
	if rec.Expect {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(rec.ExpectSeq))
	}
	return opts
}
