package inboxfeed

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// Options configure Start. The zero value of each field is documented.
type Options struct {
	// MaxListeners bounds the listeners of the process. Zero: 2048.
	MaxListeners int
	// MaxPerSubscriber bounds the listeners of one subscriber (its open
	// tabs and devices). Zero: 8.
	MaxPerSubscriber int
	// MaxPerTenant bounds the listeners of all the subscribers of one
	// tenant, so that one tenant's audience cannot take every place of
	// the process from the others. Zero: half of MaxListeners, at least
	// MaxPerSubscriber.
	MaxPerTenant int
	// Buffer is how many changes may wait for one listener before it is
	// dropped. Zero: 16.
	Buffer int
	// Logger receives the feed's logs. Zero: slog.Default().
	Logger *slog.Logger
	// TailRestarted hears of each restart of the feed's event tail (see
	// eventlog.TailOptions.Restarted): a metrics hook. Zero: none.
	TailRestarted func()
}

func (o *Options) setDefaults() {
	if o.MaxListeners == 0 {
		o.MaxListeners = 2048
	}
	if o.MaxPerSubscriber == 0 {
		o.MaxPerSubscriber = 8
	}
	if o.MaxPerTenant == 0 {
		o.MaxPerTenant = max(o.MaxListeners/2, o.MaxPerSubscriber)
	}
	if o.Buffer == 0 {
		o.Buffer = 16
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Change is one inbox event of a subscriber.
type Change struct {
	// Seq is the event's stream sequence.
	Seq uint64
	// Type is events.InAppMessageStored or events.InboxMessagesMarked.
	Type string
	// At is the event's time.
	At time.Time
	// Stored is the stored message (InAppMessageStored only): a new
	// message is unseen, unread and not archived, so a stream can show it
	// without waiting for the read model.
	Stored *events.InAppMessageStoredData
}

type subscriber struct{ tenant, id string }

// Feed follows the inbox subjects of the log and hands each event to the
// listeners of its subscriber. Create it with Start; end it with Stop. It
// is safe for concurrent use.
type Feed struct {
	log  *eventlog.Log
	opts Options

	mu        sync.Mutex
	pos       uint64 // the last sequence dispatched (or the start)
	listeners map[subscriber]map[*Listener]struct{}
	count     int
	perTenant map[string]int // listeners by tenant; a tenant with none is absent
	stopped   bool

	cancel context.CancelFunc
	done   chan struct{}
}

// filter matches every inbox subject: ev.<tenant>.inbox.<subscriber>.
const filter = "ev.*." + eventlog.AggInbox + ".*"

// Start opens the feed at the end of the log and follows it in a
// goroutine of its own until Stop.
func Start(ctx context.Context, log *eventlog.Log, opts Options) (*Feed, error) {
	opts.setDefaults()
	pos, err := log.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	tail, err := log.Tail(ctx, tailOptions(opts, pos))
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	f := &Feed{log: log, opts: opts, pos: pos, listeners: map[subscriber]map[*Listener]struct{}{},
		perTenant: map[string]int{}, cancel: cancel, done: make(chan struct{})}
	go f.run(runCtx, tail)
	return f, nil
}

// Stop ends the feed and closes every listener's channel. It is safe to
// call more than once.
func (f *Feed) Stop() {
	f.cancel()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	for _, ls := range f.listeners {
		for l := range ls {
			l.closeLocked()
		}
	}
}

// run follows the tail, and a new one after a failure, until ctx ends.
// tailOptions are the options of the feed's tail after the sequence after.
func tailOptions(opts Options, after uint64) eventlog.TailOptions {
	return eventlog.TailOptions{After: after, Filters: []string{filter}, Buffer: 1024, Logger: opts.Logger,
		Restarted: opts.TailRestarted}
}

func (f *Feed) run(ctx context.Context, tail *eventlog.Tail) {
	defer close(f.done)
	for {
		err := f.follow(ctx, tail)
		tail.Stop()
		if ctx.Err() != nil {
			return
		}
		f.opts.Logger.Error("inbox feed broke off; following again", "err", err)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			f.mu.Lock()
			after := f.pos
			f.mu.Unlock()
			if tail, err = f.log.Tail(ctx, tailOptions(f.opts, after)); err == nil {
				break
			}
			f.opts.Logger.Error("inbox feed cannot follow the log", "err", err)
		}
	}
}

func (f *Feed) follow(ctx context.Context, tail *eventlog.Tail) error {
	for {
		evs, err := tail.Next(ctx, 256)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			f.dispatch(ev)
		}
	}
}

// dispatch hands ev to its subscriber's listeners and moves the position.
// A stored message is decoded only when its subscriber has a listener.
func (f *Feed) dispatch(ev eventlog.Event) {
	tenant, _, id, err := eventlog.ParseSubject(ev.Subject)
	known := ev.Type == events.InAppMessageStored || ev.Type == events.InboxMessagesMarked
	k := subscriber{tenant, id}
	f.mu.Lock()
	if err != nil || !known || len(f.listeners[k]) == 0 {
		f.pos = max(f.pos, ev.Seq)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	c := Change{Seq: ev.Seq, Type: ev.Type, At: ev.At}
	ok := true
	if ev.Type == events.InAppMessageStored {
		var d events.InAppMessageStoredData
		ok = ev.Decode(&d) == nil
		c.Stored = &d
	}
	// The position moves with the hand-over, under one lock: a listener
	// registered meanwhile is handed ev, one registered after reads it
	// from the read model.
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pos = max(f.pos, ev.Seq)
	if !ok {
		return
	}
	for l := range f.listeners[k] {
		select {
		case l.ch <- c:
		default:
			l.overflowed = true
			l.closeLocked()
		}
	}
}

// Listen registers a listener of one subscriber's inbox and returns it
// with the feed's position: every change after that sequence is sent on
// the listener's channel. Close it when done.
// Errors: ErrTooManyListeners, ErrTooManyForTenant,
// ErrTooManyForSubscriber, ErrStopped.
func (f *Feed) Listen(tenant, subscriberID string) (*Listener, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return nil, 0, ErrStopped
	}
	if f.count >= f.opts.MaxListeners {
		return nil, 0, ErrTooManyListeners
	}
	if f.perTenant[tenant] >= f.opts.MaxPerTenant {
		return nil, 0, ErrTooManyForTenant
	}
	k := subscriber{tenant, subscriberID}
	ls := f.listeners[k]
	if len(ls) >= f.opts.MaxPerSubscriber {
		return nil, 0, ErrTooManyForSubscriber
	}
	if ls == nil {
		ls = map[*Listener]struct{}{}
		f.listeners[k] = ls
	}
	l := &Listener{f: f, key: k, ch: make(chan Change, f.opts.Buffer)}
	l.C = l.ch
	ls[l] = struct{}{}
	f.count++
	f.perTenant[tenant]++
	return l, f.pos, nil
}

// Listener receives the changes of one subscriber's inbox on C, in log
// order. C is closed when the listener is dropped (Overflowed), the feed
// stops, or Close is called.
type Listener struct {
	C <-chan Change

	f          *Feed
	key        subscriber
	ch         chan Change
	closed     bool // guarded by f.mu
	overflowed bool // guarded by f.mu
}

// Overflowed reports whether the feed dropped the listener because its
// channel was full.
func (l *Listener) Overflowed() bool {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	return l.overflowed
}

// Close unregisters the listener. It is safe to call more than once.
func (l *Listener) Close() {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.closeLocked()
}

// closeLocked unregisters l and closes its channel; f.mu is held.
func (l *Listener) closeLocked() {
	if l.closed {
		return
	}
	l.closed = true
	close(l.ch)
	ls := l.f.listeners[l.key]
	delete(ls, l)
	if len(ls) == 0 {
		delete(l.f.listeners, l.key)
	}
	l.f.count--
	if l.f.perTenant[l.key.tenant]--; l.f.perTenant[l.key.tenant] == 0 {
		delete(l.f.perTenant, l.key.tenant)
	}
}
