// Package livetail is the live tail of the console: the events of one
// tenant as they are appended, fanned out in memory from one tail of the
// event log per process to the listeners of each tenant (the SSE streams
// of GET /v1/tail).
//
// The tail runs only while someone listens: it starts at the log's end
// with the first listener and stops with the last, so a process nobody
// watches reads nothing more than it did without it. A listener whose
// channel is full (its client reads too slowly) is dropped: its channel
// is closed and Overflowed reports it; the client reconnects.
package livetail

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/heraldhq/herald/eventlog"
)

var (
	// ErrTooManyListeners is returned by Listen when the process holds
	// Options.MaxListeners listeners already.
	ErrTooManyListeners = errors.New("livetail: too many live tails on this server")
	// ErrTooManyForTenant is returned by Listen when the tenant holds
	// Options.MaxPerTenant listeners already.
	ErrTooManyForTenant = errors.New("livetail: too many live tails for this tenant on this server")
)

// Options configure New. The zero value of each field is documented.
type Options struct {
	// MaxListeners bounds the listeners of the process. Zero: 256.
	MaxListeners int
	// MaxPerTenant bounds the listeners of one tenant. Zero: 8.
	MaxPerTenant int
	// Buffer is how many events may wait for one listener before it is
	// dropped. Zero: 512.
	Buffer int
	// Logger receives the feed's logs. Zero: slog.Default().
	Logger *slog.Logger
	// TailRestarted hears of each restart of the feed's tail (see
	// eventlog.TailOptions.Restarted): a metrics hook. Zero: none.
	TailRestarted func()
}

// Feed hands the events of the log to the listeners of their tenant. It
// is safe for concurrent use.
type Feed struct {
	log  *eventlog.Log
	opts Options

	mu        sync.Mutex
	listeners map[string]map[*Listener]struct{} // by tenant
	count     int
	stop      context.CancelFunc // of the running tail; nil when none runs
	done      chan struct{}      // closed when the running tail has ended
}

// New returns a feed of log. Nothing runs until the first Listen.
func New(log *eventlog.Log, opts Options) *Feed {
	if opts.MaxListeners == 0 {
		opts.MaxListeners = 256
	}
	if opts.MaxPerTenant == 0 {
		opts.MaxPerTenant = 8
	}
	if opts.Buffer == 0 {
		opts.Buffer = 512
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Feed{log: log, opts: opts, listeners: map[string]map[*Listener]struct{}{}}
}

// Listener receives the events of one tenant on C, in log order, from the
// moment Listen returned. C is closed when the listener is dropped
// (Overflowed) or closed.
type Listener struct {
	C <-chan eventlog.Event

	f          *Feed
	tenant     string
	ch         chan eventlog.Event
	closed     bool // guarded by f.mu
	overflowed bool // guarded by f.mu
}

// Listen registers a listener of the tenant's events, starting the tail
// at the log's end if none runs. Errors: ErrTooManyListeners,
// ErrTooManyForTenant, or the log's when the tail cannot start.
func (f *Feed) Listen(ctx context.Context, tenant string) (*Listener, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count >= f.opts.MaxListeners {
		return nil, ErrTooManyListeners
	}
	if len(f.listeners[tenant]) >= f.opts.MaxPerTenant {
		return nil, ErrTooManyForTenant
	}
	if f.stop == nil {
		// The tail starts under the lock: a listener registered while it
		// starts would otherwise miss the events before its start.
		pos, err := f.log.LastSeq(ctx)
		if err != nil {
			return nil, err
		}
		tail, err := f.log.Tail(ctx, f.tailOptions(pos))
		if err != nil {
			return nil, err
		}
		run, cancel := context.WithCancel(context.Background())
		f.stop, f.done = cancel, make(chan struct{})
		go f.run(run, tail, pos, f.done)
	}
	l := &Listener{f: f, tenant: tenant, ch: make(chan eventlog.Event, f.opts.Buffer)}
	l.C = l.ch
	if f.listeners[tenant] == nil {
		f.listeners[tenant] = map[*Listener]struct{}{}
	}
	f.listeners[tenant][l] = struct{}{}
	f.count++
	return l, nil
}

// Close unregisters the listener and closes its channel; the last one
// stops the tail. It is safe to call more than once.
func (l *Listener) Close() {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.closeLocked()
}

// Overflowed reports whether the feed dropped the listener because its
// channel was full.
func (l *Listener) Overflowed() bool {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	return l.overflowed
}

func (l *Listener) closeLocked() {
	if l.closed {
		return
	}
	l.closed = true
	close(l.ch)
	f := l.f
	delete(f.listeners[l.tenant], l)
	if len(f.listeners[l.tenant]) == 0 {
		delete(f.listeners, l.tenant)
	}
	f.count--
	if f.count == 0 && f.stop != nil {
		f.stop()
		f.stop = nil
	}
}

// Stop closes every listener and waits for the tail to end.
func (f *Feed) Stop() {
	f.mu.Lock()
	for _, ls := range f.listeners {
		for l := range ls {
			l.closeLocked()
		}
	}
	done := f.done
	f.mu.Unlock()
	if done != nil {
		<-done
	}
}

// tailOptions follow every event after the sequence after.
func (f *Feed) tailOptions(after uint64) eventlog.TailOptions {
	return eventlog.TailOptions{After: after, Filters: []string{"ev.>"}, Buffer: 1024, Logger: f.opts.Logger,
		Restarted: f.opts.TailRestarted}
}

// run follows tail, which starts after pos, and a new one after a
// failure, until ctx ends.
func (f *Feed) run(ctx context.Context, tail *eventlog.Tail, pos uint64, done chan struct{}) {
	defer close(done)
	for {
		for {
			evs, err := tail.Next(ctx, 256)
			if err != nil {
				break
			}
			for _, ev := range evs {
				f.dispatch(ctx, ev)
				pos = ev.Seq
			}
		}
		tail.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			var err error
			if tail, err = f.log.Tail(ctx, f.tailOptions(pos)); err == nil {
				break
			}
			f.opts.Logger.Error("live tail cannot follow the log", "err", err)
		}
	}
}

// dispatch hands ev to its tenant's listeners, unless the tail that read
// it (its run's ctx) was stopped: the last listener's Close stops it under
// the lock, and a listener registered after that, which a new tail serves
// from the log's end, must not hear what the stopped one read before.
func (f *Feed) dispatch(ctx context.Context, ev eventlog.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	for l := range f.listeners[ev.TenantID] {
		select {
		case l.ch <- ev:
		default:
			l.overflowed = true
			l.closeLocked()
		}
	}
}
