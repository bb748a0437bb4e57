package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// EventAt returns the event stored at seq; ok is false when there is none
// (never written, or deleted by an erasure). It costs one direct get.
func (l *Log) EventAt(ctx context.Context, seq uint64) (ev Event, ok bool, err error) {
	m, err := l.getMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, fmt.Errorf("eventlog: event #%d: %w", seq, err)
	}
	ev, err = decodeRaw(m.Subject, m.Sequence, m.Data)
	return ev, err == nil, err
}
