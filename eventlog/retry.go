package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// attemptTimeout bounds one try of a call that is safe to repeat (a read,
// a purge, a publish the stream de-duplicates). When a cluster node stops,
// the requests it was to answer (as a stream's leader) get no answer; they
// are asked again, of the new leader, after this long rather than failing
// after the whole Config.Timeout.
const attemptTimeout = 2 * time.Second

// retrying runs op, a call safe to repeat, until it gets an answer: each
// try is bounded by attemptTimeout, all of them by ctx or, when ctx has no
// deadline, Config.Timeout.
func (l *Log) retrying(ctx context.Context, op func(context.Context) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.cfg.Timeout)
		defer cancel()
	}
	pause := 20 * time.Millisecond
	for {
		try, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(try)
		cancel()
		if err == nil || !isLostAck(err) || ctx.Err() != nil {
			return err
		}
		if try.Err() == nil {
			// It failed at once (reconnecting, no responders): pause.
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return err
			}
			pause = min(2*pause, 500*time.Millisecond)
		}
	}
}

// errCodeDuplicateInProcess is the server's answer to a publish whose
// Msg-Id another publish is still storing (a retry racing its original on
// a replicated stream).
const errCodeDuplicateInProcess = 10158

// isLostAck reports whether a call failed for want of an answer (no
// answer in time, no responder during a leader election, the connection
// lost or reconnecting, the same message still being stored): a publish
// may or may not be stored, and asking again settles it.
func isLostAck(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == errCodeDuplicateInProcess
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

// ConflictAttempts is how many times RetryConflicts tries a write that
// keeps losing its optimistic-concurrency race.
const ConflictAttempts = 8

// RetryConflicts runs attempt, a read-decide-append that expects a
// subject's last sequence, again while it fails with ErrConflict, at most
// ConflictAttempts times: each try re-reads what the winner wrote. It
// returns attempt's first other result, ctx's error once ctx ends, or an
// error wrapping ErrConflict when every try lost.
func RetryConflicts(ctx context.Context, attempt func() error) error {
	for range ConflictAttempts {
		err := attempt()
		if !errors.Is(err, ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("%w: lost %d times in a row", ErrConflict, ConflictAttempts)
}
