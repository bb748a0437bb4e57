package eventlog

import (
	"context"
	"errors"
	"fmt"

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
	if isWrongLastSeq(err) {
		if rec.MsgID != "" {
			// A retry after a lost ack: on R1 the server answers a
			// conflict where R3 answers a duplicate. Look first.
			if last, ok, lerr := l.Last(ctx, rec.Subject); lerr == nil && ok && last.ID == rec.MsgID {
				return last.Seq, nil
			}
		}
		return 0, fmt.Errorf("%w: %s", ErrConflict, rec.Subject)
	}
	return 0, fmt.Errorf("eventlog: append %s: %w", rec.Type, err)
}

// AppendBatch writes many events with asynchronous publishes and waits for
// every acknowledgement. It returns the sequences in the order of recs. On
// error some events may have been written: callers make batches
// idempotent with MsgID. Conditional records (Expect) are allowed; a
// conflict on any of them is reported as ErrConflict after all acks.
func (l *Log) AppendBatch(ctx context.Context, recs []Record) ([]uint64, error) {
	futures := make([]jetstream.PubAckFuture, len(recs))
	for i, rec := range recs {
		msg, err := rec.message()
		if err != nil {
			return nil, err
		}
		for {
			f, err := l.js.PublishMsgAsync(msg, publishOpts(rec)...)
			if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				select {
				case <-l.js.PublishAsyncComplete():
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("eventlog: append %s: %w", rec.Type, err)
			}
			futures[i] = f
			break
		}
	}
	seqs := make([]uint64, len(recs))
	var firstErr error
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			if isWrongLastSeq(err) {
				err = fmt.Errorf("%w: %s", ErrConflict, recs[i].Subject)
			} else {
				err = fmt.Errorf("eventlog: append %s: %w", recs[i].Type, err)
			}
			if firstErr == nil {
				firstErr = err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return seqs, firstErr
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
