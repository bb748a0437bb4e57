package eventlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// DuplicateWindow is how long Msg-Id de-duplication lasts: long enough
	// for a publish retried after a lost acknowledgement, or a fan-out
	// chunk finished by its backstop. Zero: 2m.
	DuplicateWindow time.Duration
	// Timeout bounds each JetStream call made without a context deadline,
	// and the wait for each acknowledgement of a batch. Zero: 10s.
	Timeout time.Duration
	// Appended is called once for every event an Append or AppendEach
	// stored (a de-duplicated repeat is not counted), with the
	// event's type: a metrics hook. It must be fast and safe for
	// concurrent use. Zero: none.
	Appended func(eventType string)
}

func (c *Config) setDefaults() {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = 2 * time.Minute
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
		jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(cfg.Timeout))
	if err != nil {
		return nil, err
	}
	l := &Log{nc: nc, js: js, cfg: cfg}
	// Direct gets may be answered by any replica, and a follower can lag
	// behind a write the leader already acknowledged: on a replicated
	// stream a run just started could look missing. Reads there go through
	// the leader; a single replica keeps the fast direct path.
	direct := cfg.Replicas == 1
	l.events, err = l.ensureStream(ctx, jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "Herald event log: every fact, per aggregate subject",
		Subjects:    []string{"ev.>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		AllowDirect: direct,
		MaxMsgSize:  4 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: stream %s: %w", EventsStream, err)
	}
	l.work, err = l.ensureStream(ctx, jetstream.StreamConfig{
		Name:              WorkStream,
		Description:       "Herald work queue: runs to advance, fan-outs, ticks; scheduled timers",
		Subjects:          []string{"work.>", "sched.>"},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.WorkQueuePolicy,
		Replicas:          cfg.Replicas,
		Duplicates:        cfg.DuplicateWindow,
		AllowMsgSchedules: true,
		AllowDirect:       direct,
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: stream %s: %w", WorkStream, err)
	}
	return l, nil
}

// configDigestKey is the stream metadata key holding the digest of the
// configuration herald last applied to the stream.
const configDigestKey = "herald.config"

// ensureStream creates a stream, or updates it when its configuration is
// not the one herald last applied, asking again when a cluster that is
// still electing its leaders leaves a request unanswered. A process that
// starts beside running ones leaves an unchanged stream alone: an update
// is a replicated proposal, and an update racing the other processes'
// consumer creation on the same stream is a data race inside nats-server
// (filestore's UpdateConfig against ConsumerStore).
func (l *Log) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) (st jetstream.Stream, err error) {
	digest, err := configDigest(cfg)
	if err != nil {
		return nil, err
	}
	cfg.Metadata = map[string]string{configDigestKey: digest}
	err = l.retrying(ctx, func(ctx context.Context) (err error) {
		st, err = l.js.Stream(ctx, cfg.Name)
		if err == nil && st.CachedInfo().Config.Metadata[configDigestKey] == digest {
			return nil
		}
		if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		st, err = l.js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	return st, err
}

// configDigest names a stream configuration: the hex SHA-256 of its JSON.
func configDigest(cfg jetstream.StreamConfig) (string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("eventlog: stream %s: %w", cfg.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Attach returns a Log on streams that already exist, without creating or
// changing them: for tools that only read (herald audit, herald rebuild).
// It returns an error wrapping ErrNoStreams when the EVENTS or WORK stream
// is missing.
func Attach(ctx context.Context, nc *nats.Conn, cfg Config) (*Log, error) {
	cfg.setDefaults()
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(cfg.Timeout))
	if err != nil {
		return nil, err
	}
	l := &Log{nc: nc, js: js, cfg: cfg}
	for name, dst := range map[string]*jetstream.Stream{EventsStream: &l.events, WorkStream: &l.work} {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w: stream %s", ErrNoStreams, name)
		}
		if err != nil {
			return nil, fmt.Errorf("eventlog: stream %s: %w", name, err)
		}
		*dst = st
	}
	return l, nil
}

// JetStream returns the JetStream context, for consumers of the WORK stream.
func (l *Log) JetStream() jetstream.JetStream { return l.js }

// WorkConsumers returns the info of every durable consumer of the WORK
// stream (the engine's, shared by every process): one paged API call.
func (l *Log) WorkConsumers(ctx context.Context) ([]*jetstream.ConsumerInfo, error) {
	lister := l.work.ListConsumers(ctx)
	var out []*jetstream.ConsumerInfo
	for info := range lister.Info() {
		if info.Config.Durable != "" {
			out = append(out, info)
		}
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: work consumers: %w", err)
	}
	return out, nil
}

// Conn returns the NATS connection the log uses.
func (l *Log) Conn() *nats.Conn { return l.nc }

// LastSeq returns the sequence of the last event of the EVENTS stream (0
// when empty), asked of the server: the mark a read waits for to see every
// write acknowledged before it, by any process.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	info, err := l.eventsInfo(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

// eventsInfo asks the server for the EVENTS stream's info.
func (l *Log) eventsInfo(ctx context.Context) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := l.retrying(ctx, func(ctx context.Context) (err error) {
		info, err = l.events.Info(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: stream info: %w", err)
	}
	return info, nil
}

// SubjectLastSeq returns the sequence of the last event on subject, or 0
// when the subject has none.
func (l *Log) SubjectLastSeq(ctx context.Context, subject string) (uint64, error) {
	m, err := l.lastMsg(ctx, subject)
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
	m, err := l.lastMsg(ctx, subject)
	return found(m, err, "last of %s", subject)
}

// LastAs returns the data of the last event on subject decoded into a T;
// ok is false when there is none.
func LastAs[T any](ctx context.Context, l *Log, subject string) (data T, ok bool, err error) {
	ev, ok, err := l.Last(ctx, subject)
	if err != nil || !ok {
		return data, false, err
	}
	err = ev.Decode(&data)
	return data, err == nil, err
}

// lastMsg returns the last message on subject (a wildcard is allowed).
func (l *Log) lastMsg(ctx context.Context, subject string) (m *jetstream.RawStreamMsg, err error) {
	if err := CheckSubject(subject, true); err != nil {
		return nil, err
	}
	err = l.retrying(ctx, func(ctx context.Context) (err error) {
		m, err = l.events.GetLastMsgForSubject(ctx, subject)
		return err
	})
	return m, err
}

// getMsg returns the message at seq, or with WithGetMsgSubject the first
// one on that subject from seq on.
func (l *Log) getMsg(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (m *jetstream.RawStreamMsg, err error) {
	err = l.retrying(ctx, func(ctx context.Context) (err error) {
		m, err = l.events.GetMsg(ctx, seq, opts...)
		return err
	})
	return m, err
}
