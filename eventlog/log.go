package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stream names.
const (
	EventsStream = "EVENTS"
	WorkStream   = "WORK"
)

// Config describes the streams. The zero value of each field is documented.
type Config struct {
	// Replicas is the stream replica count. Zero: 1.
	Replicas int
	// DuplicateWindow is how long Msg-Id de-duplication lasts. Zero: 5m.
	DuplicateWindow time.Duration
	// Timeout bounds each JetStream call made without a context deadline.
	// Zero: 10s.
	Timeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 5 * time.Minute
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
}

// Log is a handle on the EVENTS and WORK streams. It is safe for
// concurrent use. It does not own the NATS connection.
type Log struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	events jetstream.Stream
	work   jetstream.Stream
	cfg    Config
}

// Open creates or updates the streams (idempotently) and returns a Log.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Log, error) {
	cfg.setDefaults()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(cfg.Timeout),
		jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return nil, err
	}
	l := &Log{nc: nc, js: js, cfg: cfg}
	l.events, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "Herald event log: every fact, per aggregate subject",
		Subjects:    []string{"ev.>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		AllowDirect: true,
		MaxMsgSize:  4 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: stream %s: %w", EventsStream, err)
	}
	l.work, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              WorkStream,
		Description:       "Herald work queue: runs to advance, fan-outs, ticks; scheduled timers",
		Subjects:          []string{"work.>", "sched.>"},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.WorkQueuePolicy,
		Replicas:          cfg.Replicas,
		Duplicates:        cfg.DuplicateWindow,
		AllowMsgSchedules: true,
		AllowDirect:       true,
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: stream %s: %w", WorkStream, err)
	}
	return l, nil
}

// JetStream returns the JetStream context, for consumers of the WORK stream.
func (l *Log) JetStream() jetstream.JetStream { return l.js }

// Conn returns the NATS connection the log uses.
func (l *Log) Conn() *nats.Conn { return l.nc }

// LastSeq returns the sequence of the last event of the EVENTS stream (0
// when empty), asked of the server: the mark a read waits for to see every
// write acknowledged before it, by any process.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	info, err := l.events.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("eventlog: stream info: %w", err)
	}
	return info.State.LastSeq, nil
}

// SubjectLastSeq returns the sequence of the last event on subject, or 0
// when the subject has none.
func (l *Log) SubjectLastSeq(ctx context.Context, subject string) (uint64, error) {
	m, err := l.events.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("eventlog: last of %s: %w", subject, err)
	}
	return m.Sequence, nil
}

// Last returns the last event on subject; ok is false when there is none.
func (l *Log) Last(ctx context.Context, subject string) (ev Event, ok bool, err error) {
	m, err := l.events.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, fmt.Errorf("eventlog: last of %s: %w", subject, err)
	}
	ev, err = decodeRaw(m.Subject, m.Sequence, m.Data)
	return ev, err == nil, err
}
