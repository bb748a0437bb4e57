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
	return found(m, err, "event #%d", seq)
}

// found decodes m, a message read by one direct get that failed with err;
// ok is false when the stream holds no such message. Any other error is
// wrapped with what was looked up (format and args).
func found(m *jetstream.RawStreamMsg, err error, format string, args ...any) (ev Event, ok bool, _ error) {
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, fmt.Errorf("eventlog: %s: %w", fmt.Sprintf(format, args...), err)
	}
	ev, err = decodeRaw(m.Subject, m.Sequence, m.Data)
	return ev, err == nil, err
}
