package eventlog

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestRetryingAsksAgainOnlyWithoutAnAnswer(t *testing.T) {
	l := &Log{cfg: Config{Timeout: 5 * time.Second}}
	ctx := context.Background()
	for _, lost := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse,
		nats.ErrDisconnected, &jetstream.APIError{ErrorCode: errCodeDuplicateInProcess}, fmt.Errorf("wrapped: %w", nats.ErrTimeout)} {
		tries := 0
		err := l.retrying(ctx, func(context.Context) error {
			if tries++; tries < 3 {
				return lost
			}
			return nil
		})
		if err != nil || tries != 3 {
			t.Errorf("%v: %d tries, %v", lost, tries, err)
		}
	}
	for _, answer := range []error{jetstream.ErrMsgNotFound, &jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence},
		context.Canceled, errors.New("boom")} {
		tries := 0
		err := l.retrying(ctx, func(context.Context) error { tries++; return answer })
		if !errors.Is(err, answer) || tries != 1 {
			t.Errorf("%v: %d tries, %v", answer, tries, err)
		}
	}
	// Bounded by ctx.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := l.retrying(short, func(context.Context) error { return nats.ErrNoResponders })
	if !errors.Is(err, nats.ErrNoResponders) || time.Since(began) > 2*time.Second {
		t.Fatalf("unbounded: %v after %v", err, time.Since(began))
	}
}

func TestRetryConflicts(t *testing.T) {
	ctx := context.Background()
	tries := 0
	err := RetryConflicts(ctx, func() error {
		tries++
		if tries < 3 {
			return fmt.Errorf("append: %w", ErrConflict)
		}
		return nil
	})
	if err != nil || tries != 3 {
		t.Fatalf("won on the third try: %v after %d", err, tries)
	}
	tries = 0
	other := errors.New("other")
	if err := RetryConflicts(ctx, func() error { tries++; return other }); err != other || tries != 1 {
		t.Fatalf("another error is not retried: %v after %d", err, tries)
	}
	tries = 0
	err = RetryConflicts(ctx, func() error { tries++; return ErrConflict })
	if !errors.Is(err, ErrConflict) || tries != ConflictAttempts {
		t.Fatalf("always losing: %v after %d", err, tries)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	tries = 0
	if err := RetryConflicts(cctx, func() error { tries++; return ErrConflict }); !errors.Is(err, context.Canceled) || tries != 1 {
		t.Fatalf("ended context: %v after %d", err, tries)
	}
}
