package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Tail follows the EVENTS stream in order. Create it with Log.Tail; read
// with Next; release it with Stop. A Tail is used by one goroutine.
//
// A Tail outlives the loss of the NATS node that holds its consumer: the
// client library starts the consumer again after missed heartbeats or a
// reconnect, and a watchdog of the Tail's own starts it again from the
// last event read whenever it receives nothing for StallAfter while the
// stream holds events it has not delivered (the library's own recovery
// did not happen, or is stuck).
type Tail struct {
	l    *Log
	opts TailOptions
	ch   chan tailMsg
	done chan struct{}
	once sync.Once
	stop context.CancelFunc

	// sendMu orders the handlers of successive consumers: a restart waits
	// for a handler of the consumer it replaces to finish its send.
	sendMu sync.Mutex
	gen    atomic.Uint64 // the current consumer's; older ones' messages are dropped
	last   uint64        // the stream sequence of the last message sent to ch; under sendMu
	taken  atomic.Uint64 // messages sent to ch, for the watchdog

	ccMu sync.Mutex
	cc   jetstream.ConsumeContext
	kick chan kick
}

// tailMsg is a message of the tail with its stream sequence.
type tailMsg struct {
	m   jetstream.Msg
	seq uint64
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
	// Logger receives a line for each restart of the tail's consumer.
	// Zero: slog.Default().
	Logger *slog.Logger
	// Restarted is called each time the watchdog starts the tail's
	// consumer anew: a metrics hook. Zero: none.
	Restarted func()
	// StallAfter is how long the tail may receive nothing while the
	// stream holds events for it before it follows the stream anew.
	// Zero: DefaultTailStall.
	StallAfter time.Duration
	// Received, when set, is called with each event's sequence and
	// subject as the tail takes it from the server, in order and once
	// each, before Next can return it: its caller knows what is on its
	// way before it is read. It must not block. Zero: none.
	Received func(seq uint64, subject string)
}

// tailHeartbeat is how often the server confirms an idle tail is alive. A
// tail whose consumer vanished (its node of a cluster stopped) notices after
// two missed heartbeats and recreates it on a live node, so projections stall
// for about 2s, not the client's default of 10s.
const tailHeartbeat = time.Second

// DefaultTailStall is TailOptions.StallAfter's default: longer than a
// consumer's own recovery (two missed heartbeats and a new consumer).
const DefaultTailStall = 5 * time.Second

// Tail starts following the stream.
func (l *Log) Tail(ctx context.Context, opts TailOptions) (*Tail, error) {
	if opts.Buffer == 0 {
		opts.Buffer = 4096
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StallAfter <= 0 {
		opts.StallAfter = DefaultTailStall
	}
	t := &Tail{l: l, opts: opts, ch: make(chan tailMsg, opts.Buffer), done: make(chan struct{}), last: opts.After,
		kick: make(chan kick, 1)}
	cc, err := t.consume(ctx, opts.After)
	if err != nil {
		return nil, err
	}
	t.cc = cc
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = stop
	go t.watch(wctx)
	return t, nil
}

// consume starts an ordered consumption after the sequence after (or at
// opts.Since when after is zero) whose messages go to t.ch, and returns
// once it is under way or ctx ends.
//
// It is an ordered consumer of the tail's own rather than nats.go's: that
// one asks for its new consumer with a fixed 10 s bound per try, so a
// request lost with a NATS node (the meta leader's) holds the tail that
// long. Here each try is bounded by attemptTimeout, the consumer is named
// before the first try (a retried create is the same consumer), and every
// error that means the consumer or its pull is gone (missed heartbeats, the
// consumer deleted or unknown, no responders, a gap in its delivery
// sequence) makes watch start the next one.
func (t *Tail) consume(ctx context.Context, after uint64) (jetstream.ConsumeContext, error) {
	cfg := jetstream.ConsumerConfig{
		Name:           "tail_" + nuid.Next(),
		FilterSubjects: t.opts.Filters,
		AckPolicy:      jetstream.AckNonePolicy,
		// A consumer left behind (its node lost, its delete unanswered) is
		// removed by the server once idle this long.
		InactiveThreshold: 2 * time.Minute,
		Replicas:          1,
		MemoryStorage:     true,
	}
	switch {
	case after > 0:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = after + 1
	case !t.opts.Since.IsZero():
		since := t.opts.Since
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &since
	}
	var cons jetstream.Consumer
	err := t.l.retrying(ctx, func(ctx context.Context) (err error) {
		cons, err = t.l.js.CreateOrUpdateConsumer(ctx, EventsStream, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("eventlog: tail: %w", err)
	}
	gen := t.gen.Load()
	var delivered uint64 // the consumer's delivery sequence; one handler at a time
	cc, err := cons.Consume(func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return // not a stream message: nothing to follow
		}
		if meta.Sequence.Consumer != delivered+1 {
			t.kickOnce(gen, "a gap in the consumer's delivery")
			return
		}
		delivered = meta.Sequence.Consumer
		t.sendMu.Lock()
		defer t.sendMu.Unlock()
		seq := meta.Sequence.Stream
		if gen != t.gen.Load() || seq <= t.last {
			return // a replaced consumer's, or a repeat
		}
		if t.opts.Received != nil {
			t.opts.Received(seq, m.Subject())
		}
		select {
		case t.ch <- tailMsg{m: m, seq: seq}:
			t.last = seq
			t.taken.Add(1)
		case <-t.done:
		}
	}, jetstream.PullMaxMessages(t.opts.Buffer/2), jetstream.PullHeartbeat(tailHeartbeat),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerDeleted) ||
				errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrBadRequest) ||
				errors.Is(err, nats.ErrNoResponders) {
				t.kickOnce(gen, err.Error())
			}
		}))
	if err != nil {
		go t.deleteConsumer(cfg.Name)
		return nil, fmt.Errorf("eventlog: tail: %w", err)
	}
	return &tailConsumption{ConsumeContext: cc, name: cfg.Name, t: t}, nil
}

// tailConsumption deletes its consumer when stopped.
type tailConsumption struct {
	jetstream.ConsumeContext
	name string
	t    *Tail
}

func (c *tailConsumption) Stop() {
	c.ConsumeContext.Stop()
	go c.t.deleteConsumer(c.name)
}

// deleteConsumer removes a consumer the tail no longer uses; one the
// server does not answer for is removed by its InactiveThreshold.
func (t *Tail) deleteConsumer(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	_ = t.l.js.DeleteConsumer(ctx, EventsStream, name)
}

// kickOnce asks watch to start the consumption of generation gen anew.
func (t *Tail) kickOnce(gen uint64, reason string) {
	if gen != t.gen.Load() {
		return
	}
	select {
	case t.kick <- kick{gen: gen, reason: reason}:
	default:
	}
}

// kick is a request to start the tail's consumption anew.
type kick struct {
	gen    uint64
	reason string
}

// watch starts the consumer anew when it stalled: nothing taken for
// StallAfter, nothing waiting for the reader, and the stream holds an event
// after the last one taken.
func (t *Tail) watch(ctx context.Context) {
	tick := time.NewTicker(max(t.opts.StallAfter/5, 10*time.Millisecond))
	defer tick.Stop()
	taken, quietSince := t.taken.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-t.kick:
			if k.gen != t.gen.Load() {
				continue // the consumption it was about is already replaced
			}
			t.sendMu.Lock()
			last := t.last
			t.sendMu.Unlock()
			t.restart(ctx, last, k.reason)
			taken, quietSince = t.taken.Load(), time.Now()
		case now := <-tick.C:
			if n := t.taken.Load(); n != taken || len(t.ch) > 0 {
				taken, quietSince = n, now
				continue
			}
			if now.Sub(quietSince) < t.opts.StallAfter {
				continue
			}
			quietSince = now // the next look, if nothing comes, is StallAfter on
			t.sendMu.Lock()
			last := t.last
			t.sendMu.Unlock()
			if !t.behind(ctx, last) {
				continue
			}
			t.restart(ctx, last, "stalled: nothing received while the stream holds events")
			taken = t.taken.Load()
		}
	}
}

// behind reports whether the stream holds an event the tail follows after
// the sequence last. An unanswered question (an election under way) is a
// no: the next look asks again.
//
// A tail of every event asks for the next one after last, which the
// server finds at once. A filtered tail asks for the last event of each
// filter instead: the next one after last would have the server read,
// message by message, every block appended since last, and a filtered tail
// is quiet for long while the stream grows (the inbox feed during an
// email broadcast, every StallAfter: at a million runs, a scan of
// gigabytes every five seconds, and every block's buffer kept loaded).
// The last of a filter is found from the subject index and one block.
func (t *Tail) behind(ctx context.Context, last uint64) bool {
	if last == 0 && !t.opts.Since.IsZero() {
		return false // nothing read yet after an instant: no sequence to compare
	}
	filters := t.opts.Filters
	if len(filters) == 0 {
		filters = []string{allEvents}
	}
	for _, f := range filters {
		try, cancel := context.WithTimeout(ctx, attemptTimeout)
		var m *jetstream.RawStreamMsg
		var err error
		if f == allEvents {
			m, err = t.l.events.GetMsg(try, last+1, jetstream.WithGetMsgSubject(f))
		} else {
			m, err = t.l.events.GetLastMsgForSubject(try, f)
		}
		cancel()
		if err == nil && m.Sequence > last {
			return true
		}
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return false
		}
	}
	return false
}

// allEvents is the EVENTS stream's subject: every event.
const allEvents = "ev.>"

// restart replaces the tail's consumer with one that starts after last.
func (t *Tail) restart(ctx context.Context, last uint64, reason string) {
	t.sendMu.Lock()
	t.gen.Add(1)
	last = max(last, t.last)
	t.sendMu.Unlock()
	t.opts.Logger.Warn("event tail lost its consumer; following the stream anew", "after", last, "reason", reason)
	t.ccMu.Lock()
	t.cc.Stop()
	t.ccMu.Unlock()
	for {
		try, cancel := context.WithTimeout(ctx, attemptTimeout)
		cc, err := t.consume(try, last)
		cancel()
		if err == nil {
			t.ccMu.Lock()
			t.cc = cc
			t.ccMu.Unlock()
			if t.opts.Restarted != nil {
				t.opts.Restarted()
			}
			return
		}
		t.opts.Logger.Warn("event tail: consumer not available; trying again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Next blocks until at least one event is available (or ctx ends) and
// returns up to max events, oldest first.
func (t *Tail) Next(ctx context.Context, max int) ([]Event, error) {
	var first tailMsg
	select {
	case first = <-t.ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]Event, 0, min(max, len(t.ch)+1))
	ev, err := first.decode()
	if err != nil {
		return nil, err
	}
	out = append(out, ev)
	for len(out) < max {
		select {
		case m := <-t.ch:
			ev, err := m.decode()
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		default:
			return out, nil
		}
	}
	return out, nil
}

func (m tailMsg) decode() (Event, error) { return decodeRaw(m.m.Subject(), m.seq, m.m.Data()) }

// Stop ends the tail. It is safe to call more than once.
func (t *Tail) Stop() {
	t.once.Do(func() {
		close(t.done)
		t.stop()
		t.ccMu.Lock()
		t.cc.Stop()
		t.ccMu.Unlock()
	})
}
