package eventlog

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Tail follows the EVENTS stream in order. Create it with Log.Tail; read
// with Next; release it with Stop. A Tail is used by one goroutine.
type Tail struct {
	cc   jetstream.ConsumeContext
	ch   chan jetstream.Msg
	done chan struct{}
	once sync.Once
}

// TailOptions select what a Tail follows. The zero value follows every
// event from the first.
type TailOptions struct {
	// After is the last sequence already seen; the tail starts at After+1.
	After uint64
	// Since, when After is zero, starts the tail at the first event the
	// stream stored at or after this instant (the server's clock). Zero:
	// from the first event.
	Since time.Time
	// Filters are subject filters. Zero: every event (ev.>).
	Filters []string
	// Buffer is how many messages may wait for Next. Zero: 4096.
	Buffer int
}

// tailHeartbeat is how often the server confirms an idle tail is alive. A
// tail whose consumer vanished (its node of a cluster stopped) notices after
// two missed heartbeats and recreates it on a live node, so projections stall
// for about 2s, not the client's default of 10s.
const tailHeartbeat = time.Second

// Tail starts following the stream.
func (l *Log) Tail(ctx context.Context, opts TailOptions) (*Tail, error) {
	if opts.Buffer == 0 {
		opts.Buffer = 4096
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: opts.Filters}
	switch {
	case opts.After > 0:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = opts.After + 1
	case !opts.Since.IsZero():
		since := opts.Since
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &since
	}
	cons, err := l.js.OrderedConsumer(ctx, EventsStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("eventlog: tail: %w", err)
	}
	t := &Tail{ch: make(chan jetstream.Msg, opts.Buffer), done: make(chan struct{})}
	t.cc, err = cons.Consume(func(m jetstream.Msg) {
		select {
		case t.ch <- m:
		case <-t.done:
		}
	}, jetstream.PullMaxMessages(opts.Buffer/2), jetstream.PullHeartbeat(tailHeartbeat))
	if err != nil {
		return nil, fmt.Errorf("eventlog: tail: %w", err)
	}
	return t, nil
}

// Next blocks until at least one event is available (or ctx ends) and
// returns up to max events, oldest first.
func (t *Tail) Next(ctx context.Context, max int) ([]Event, error) {
	var first jetstream.Msg
	select {
	case first = <-t.ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]Event, 0, min(max, len(t.ch)+1))
	add := func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("eventlog: tail: %w", err)
		}
		ev, err := decodeRaw(m.Subject(), meta.Sequence.Stream, m.Data())
		if err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	}
	if err := add(first); err != nil {
		return nil, err
	}
	for len(out) < max {
		select {
		case m := <-t.ch:
			if err := add(m); err != nil {
				return nil, err
			}
		default:
			return out, nil
		}
	}
	return out, nil
}

// Stop ends the tail. It is safe to call more than once.
func (t *Tail) Stop() {
	t.once.Do(func() {
		close(t.done)
		t.cc.Stop()
	})
}
