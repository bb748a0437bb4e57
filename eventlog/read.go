package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// History returns the events of one subject with a sequence greater than
// after, oldest first. Each event is one direct get by subject, so the cost
// follows the subject's own length, not the stream's.
func (l *Log) History(ctx context.Context, subject string, after uint64) ([]Event, error) {
	if err := CheckSubject(subject, true); err != nil {
		return nil, fmt.Errorf("eventlog: history: %w", err)
	}
	var out []Event
	next := after + 1
	for {
		m, err := l.getMsg(ctx, next, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("eventlog: history of %s: %w", subject, err)
		}
		ev, err := decodeRaw(m.Subject, m.Sequence, m.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
		next = m.Sequence + 1
	}
}

// First returns the first event on subject; ok is false when there is none.
// It costs one direct get, however long the subject's history.
func (l *Log) First(ctx context.Context, subject string) (ev Event, ok bool, err error) {
	if err := CheckSubject(subject, true); err != nil {
		return Event{}, false, fmt.Errorf("eventlog: first: %w", err)
	}
	m, err := l.getMsg(ctx, 1, jetstream.WithGetMsgSubject(subject))
	return found(m, err, "first of %s", subject)
}
