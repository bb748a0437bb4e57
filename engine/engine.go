package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/projections"
)

// Config tunes the engine. The zero value of each field is documented.
type Config struct {
	// RetryBase is the first retry backoff. Zero: 1s.
	RetryBase time.Duration
	// MaxAttempts is how many times one step is tried. Zero: 8.
	MaxAttempts int
	// Workers is how many runs advance at once in this process. Zero: 128.
	Workers int
	// MaxAckPending bounds unacknowledged work messages per consumer,
	// shared by every process; runs held until their instant count (see
	// timers.go), so it bounds the runs asleep on short delays at once.
	// Zero: 32768.
	MaxAckPending int
	// AckWait is how long a work message may go without word from its
	// worker before it is redelivered (to another process after a crash);
	// a worker reports progress every AckWait/3 while it works. Zero: 15s.
	AckWait time.Duration
	// FanoutBackstop is how long after a trigger an unfinished fan-out is
	// taken over by a fan-out worker (after a crash). Zero: 20s.
	FanoutBackstop time.Duration
	// TenantConcurrency caps the runs one tenant advances at once in this
	// process; a tenant's further work waits without taking a worker (see
	// fair.go). Zero: half of Workers, at least 1.
	TenantConcurrency int
	// CrowdedShare caps the runs one tenant advances at once while this
	// process's cores are crowded and another tenant has runs under way
	// (see crowd.go). Zero: TenantConcurrency/16, at least 1.
	CrowdedShare int
	// MaxParked bounds the work messages parked in memory at once, every
	// tenant's together, while their tenants are at TenantConcurrency
	// (fair.go): beyond it, new work waits on the server. Another tenant's
	// new work is taken at once while a tenant's backlog is under the
	// bound. Zero: half of MaxAckPending.
	MaxParked int
	// StepsPerTurn bounds the steps one worker runs for one run before it
	// re-enqueues the run, for fairness. Zero: 64.
	StepsPerTurn int
	// CacheBytes bounds the memory of the engine's caches, by estimated
	// bytes: half for folded run states (outputs and signals included),
	// a quarter for trigger payloads, three sixteenths for digest windows,
	// one for throttle counts. A miss only costs a read of the log. Zero:
	// 256 MiB.
	CacheBytes int64
	// PrimeLimit: runs started while the state cache holds this many
	// states are not primed into it (see Engine.prime). Zero: 16384.
	PrimeLimit int
	// TimerLead is how early a run's durable timer (a delay's end, a
	// retry, a wait's timeout) fires; the worker then holds the run's work
	// message in memory and resumes the run on the exact instant (see
	// timers.go); a run due within 2×TimerLead is held without a durable
	// timer. It is capped at AckWait/6. Zero: 2.5s (with the default
	// AckWait, the cap).
	TimerLead time.Duration
	// BridgeTimeout bounds one Bridge call. Zero: 30s.
	BridgeTimeout time.Duration
	// BridgeTransport, when set, wraps the transport of the Bridge client
	// New builds when Deps.Client is nil, e.g. to time every call for the
	// metrics. Zero: the pooled transport as it is.
	BridgeTransport func(http.RoundTripper) http.RoundTripper
	// Egress, when set, is the policy every Bridge call New's client makes
	// dials through (and, with private egress off, https only): a refused
	// call fails the run terminally (apierr.CodeEgressRefused). Nil: any
	// address, as the OS routes it.
	Egress *egress.Policy
	// WokeLate, when set, hears how late each run woken by its timer
	// reached its Bridge call.
	WokeLate func(time.Duration)
	// SteppedAside, when set, hears of each woken turn that put off
	// recording its Bridge answer (see aside.go).
	SteppedAside func()
	// ConsumerRestarted, when set, hears of each work consumption started
	// anew after it failed or stalled (see eventlog.Consume).
	ConsumerRestarted func(consumer, reason string)
	// WorkRetryBase is the first pause before work that failed on an
	// infrastructure error comes back; it doubles with each failure in a
	// row up to WorkRetryMax. Zero: 1s.
	WorkRetryBase time.Duration
	// WorkRetryMax caps that pause. Zero: 1m.
	WorkRetryMax time.Duration
	// MaxWorkFailures is how many times in a row work may fail on an
	// infrastructure error before it is dead: its run fails with
	// infrastructure_exhausted (see deadletter.go). Zero: 12 (about 7
	// minutes with the default pauses).
	MaxWorkFailures int
	// FanoutChunk is how many runs one step of a fan-out starts (and how
	// many subscribers a broadcast reads at once). Zero:
	// DefaultFanoutChunk.
	FanoutChunk int
	// FanoutAhead is how many of a broadcast's runs may wait on the bulk
	// lane, not yet taken by any engine, before its fan-out pauses (see
	// broadcast.go). Zero: four chunks.
	FanoutAhead int
	// MaxRunSteps bounds the steps of one run: the answer that would
	// record one more fails the run with invalid_step. Zero:
	// DefaultMaxRunSteps.
	MaxRunSteps int
	// MaxRunOutputBytes bounds the recorded outputs of one run's steps
	// together, as MaxRunSteps does. Zero: DefaultMaxRunOutputBytes.
	MaxRunOutputBytes int
	// Now is the clock. Zero: time.Now.
	Now func() time.Time
	// Logger receives the engine's logs. Zero: slog.Default().
	Logger *slog.Logger
	// Links makes the unsubscribe and preference page links of execute
	// requests (CONTRACT §12). Zero, or a Maker without a public URL: no
	// links.
	Links *links.Maker
}

// DefaultAckWait is Config.AckWait's default.
const DefaultAckWait = 15 * time.Second

func (c *Config) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxAttempts, 8)
	def(&c.Workers, 128)
	def(&c.MaxAckPending, 32768)
	def(&c.StepsPerTurn, 64)
	if c.CacheBytes == 0 {
		c.CacheBytes = 256 << 20
	}
	def(&c.PrimeLimit, 16384)
	def(&c.MaxWorkFailures, 12)
	def(&c.FanoutChunk, DefaultFanoutChunk)
	def(&c.FanoutAhead, 4*c.FanoutChunk)
	def(&c.MaxRunSteps, DefaultMaxRunSteps)
	def(&c.MaxRunOutputBytes, DefaultMaxRunOutputBytes)
	if c.WorkRetryBase == 0 {
		c.WorkRetryBase = time.Second
	}
	if c.WorkRetryMax == 0 {
		c.WorkRetryMax = time.Minute
	}
	def(&c.TenantConcurrency, max(1, c.Workers/2))
	def(&c.CrowdedShare, max(1, c.TenantConcurrency/16))
	def(&c.MaxParked, max(1, c.MaxAckPending/2))
	if c.RetryBase == 0 {
		c.RetryBase = time.Second
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.TimerLead == 0 {
		c.TimerLead = 2500 * time.Millisecond
	}
	if c.FanoutBackstop == 0 {
		c.FanoutBackstop = 20 * time.Second
	}
	if c.BridgeTimeout == 0 {
		c.BridgeTimeout = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Bridges opens a tenant's Bridge binding.
type Bridges interface {
	// BridgeSecret returns the tenant's webhook URL and current signing
	// secret in clear, or an error of kind apierr.ErrNotFound.
	BridgeSecret(ctx context.Context, tenant string) (url, secret string, err error)
}

// Deps are what the engine drives and reads.
type Deps struct {
	Log       *eventlog.Log
	Store     *projections.Store
	Bridges   Bridges
	Deliverer Deliverer
	// Client calls Bridges. Zero: a bridgeclient.Client with Config.BridgeTimeout.
	Client *bridgeclient.Client
	// Work is the connection the engine consumes work on: one of its own
	// keeps due work from queueing behind other traffic (the projector's
	// tail of the event stream above all). Zero: Log's connection.
	Work *nats.Conn
}

// Engine advances runs. Create it with New; Run starts its workers.
type Engine struct {
	cfg       Config
	log       *eventlog.Log
	store     *projections.Store
	bridgeSrc Bridges
	bridges   bridgeCache
	deliver   Deliverer
	client    *bridgeclient.Client
	logger    *slog.Logger
	states    *stateCache
	payloads  *byteCache[[]byte]
	digests   *byteCache[*digestState]
	throttles *byteCache[*throttleState]
	work      *nats.Conn
	// workJS is the JetStream of the WORK stream, set by Run before any
	// work is taken.
	workJS jetstream.JetStream
	// pressure is when a woken run was last late (see noteLate).
	pressure pressure
	// asides are the runs whose turn stepped aside (see aside.go).
	asides asides
	// stopping is set when Run's context ends: turns end after their
	// current step.
	stopping atomic.Bool
	// failures counts work failing in a row (see deadletter.go).
	failures failures
	// starts are the single-subscriber triggers this process is at (see
	// single.go).
	starts starts
}

// New returns an engine; it does nothing until Run.
func New(cfg Config, deps Deps) *Engine {
	cfg.setDefaults()
	client := deps.Client
	if client == nil {
		pooled := pooledTransport(cfg.Workers)
		if cfg.Egress != nil {
			pooled.Proxy = nil // the proxy, not the Bridge, would be the address checked
			pooled.DialContext = cfg.Egress.Dialer(0).DialContext
		}
		var rt http.RoundTripper = pooled
		if cfg.Egress != nil {
			rt = cfg.Egress.RequireTLS(pooled)
		}
		if cfg.BridgeTransport != nil {
			rt = cfg.BridgeTransport(rt)
		}
		client = &bridgeclient.Client{Timeout: cfg.BridgeTimeout, HTTP: &http.Client{Transport: rt}, Logger: cfg.Logger}
	}
	return &Engine{cfg: cfg, log: deps.Log, store: deps.Store, bridgeSrc: deps.Bridges, deliver: deps.Deliverer,
		client: client, logger: cfg.Logger, states: newStateCache(cfg.CacheBytes / 2),
		payloads: newByteCache(cfg.CacheBytes/4, payloadBytes), digests: newByteCache(cfg.CacheBytes*3/16, digestBytes),
		work: deps.Work, throttles: newByteCache(cfg.CacheBytes/16, throttleBytes)}
}

// pooledTransport keeps enough idle connections for every worker to reuse
// one: the default two per host make a busy engine dial for every call.
func pooledTransport(workers int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 4 * workers
	t.MaxIdleConnsPerHost = workers
	return t
}

// Consumer names on the WORK stream, shared by every herald process.
const (
	runsConsumer   = "herald-runs"
	bulkConsumer   = "herald-bulk"
	wakesConsumer  = "herald-wakes"
	fanoutConsumer = "herald-fanout"
	ticksConsumer  = "herald-ticks"
)

// pullHeartbeat is how often the server confirms a waiting pull request is
// alive. When a cluster node that led a consumer stops, its pull requests
// vanish with it; two missed heartbeats make the client pull again from the
// new leader: a stall of about 4s instead of the client's default of 30s.
const pullHeartbeat = 2 * time.Second

// Run consumes work until ctx ends, then stops taking work and lets the
// turns under way finish the step they are at (for at most AckWait/3:
// a Bridge call cut short would run its step again elsewhere), records
// the turns that stepped aside, and returns.
func (e *Engine) Run(ctx context.Context) error {
	js := e.log.JetStream()
	if e.work != nil {
		var err error
		if js, err = jetstream.New(e.work); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	}
	e.workJS = js
	consumers := []struct {
		name, filter string
		handle       handler
		workers      int
		// pending bounds the consumer's unacknowledged messages.
		pending int
		// fired: the consumer's messages are fired timers, handed to the
		// workers of the consumer before it (runs) ahead of their new work.
		fired bool
		// bulk: the consumer's messages are broadcast runs' first work,
		// handed to the workers of the runs consumer as their tenants
		// have room (bulk.go).
		bulk bool
	}{
		{runsConsumer, eventlog.WorkRunPrefix + ">", e.handleRunWork, e.cfg.Workers, e.cfg.MaxAckPending, false, false},
		{bulkConsumer, eventlog.WorkBulkPrefix + ">", e.handleRunWork, 0, 2 * bulkBatch, false, true},
		// Fired timers are mostly held until their instant (timers.go): room
		// for every run of a large population waking within 2×lead.
		{wakesConsumer, eventlog.WorkWake, e.handleRun, 0, 4 * e.cfg.MaxAckPending, true, false},
		{fanoutConsumer, eventlog.WorkFanoutPrefix + ">", doneWhenNil(e.handleFanout), 4, e.cfg.MaxAckPending, false, false},
		{ticksConsumer, eventlog.WorkTickPrefix + ">", doneWhenNil(e.handleTick), 4, e.cfg.MaxAckPending, false, false},
	}
	// work outlives ctx by the grace period: the turns under way finish
	// their step; between steps they see stopping and end (see steps).
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	go func() {
		select {
		case <-ctx.Done():
			e.stopping.Store(true)
			t := time.AfterFunc(e.cfg.AckWait/3, stopWork)
			<-work.Done()
			t.Stop()
		case <-work.Done():
		}
	}()
	var wg sync.WaitGroup
	var stops []func()
	var q *scheduler
	var all []*scheduler
	for _, c := range consumers {
		if !c.fired && !c.bulk {
			q = newScheduler(ctx, c.workers, &e.pressure)
			all = append(all, q)
			if c.name == runsConsumer {
				q.fair = newFair(e.cfg.TenantConcurrency, e.cfg.MaxParked)
				q.fair.share = e.cfg.CrowdedShare
				var c crowd
				q.fair.crowded = c.crowded
				go c.watch(ctx)
				q.progressEvery = e.cfg.AckWait / 3
				go q.fair.keepAlive(ctx, e.cfg.AckWait/3)
			}
		}
		// The client buffers at most one message per worker: a message
		// waiting in the buffer gets no progress report, so one that waits
		// past AckWait is delivered again, and a deep buffer behind slow
		// turns turns into waves of redeliveries (each copy queued again).
		into, batch := q.add, min(c.workers, 1024)
		switch {
		case c.fired:
			into, batch = q.fire, 1024
		case c.bulk:
			into, batch = q.addBulk, bulkBatch
		}
		if c.name == runsConsumer || c.bulk {
			into = e.admit(into)
		}
		if c.bulk {
			admit := into
			into = func(m jetstream.Msg) { admit(asRunWork(m)) }
		}
		// A consumption outlives the loss of NATS nodes: while the cluster
		// elects, it is created again with retries, and one that stops
		// receiving is consumed anew (eventlog.Consume).
		cc, err := eventlog.Consume(ctx, js, eventlog.Durable{
			Stream: eventlog.WorkStream,
			Config: jetstream.ConsumerConfig{
				Durable:       c.name,
				FilterSubject: c.filter,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       e.cfg.AckWait,
				// Unbounded here: holds, busy runs and stops give work back
				// without fault, so the server's count is no failure count.
				// Failures are bounded by the engine (see deadletter.go).
				MaxDeliver:    -1,
				MaxAckPending: c.pending,
				BackOff:       nil,
			},
			Handler:   into,
			Options:   []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(batch), jetstream.PullHeartbeat(pullHeartbeat)},
			Logger:    e.logger,
			Restarted: e.cfg.ConsumerRestarted,
		})
		if err != nil {
			break // ctx ended while the cluster had no leader for the consumer
		}
		stops = append(stops, cc.Stop)
		q := q
		for range c.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					j, ok := q.next()
					if !ok {
						return
					}
					e.process(work, j, c.handle, q)
					q.done(j)
				}
			}()
		}
	}
	<-ctx.Done()
	for _, stop := range stops {
		stop()
	}
	wg.Wait()
	for _, q := range all {
		q.release()
	}
	for _, q := range all {
		e.drainLater(work, q)
		e.drainFair(work, q)
	}
	return nil
}

// drainFair gives the work messages parked by q's fairness back to the
// server when the engine stops; a parked turn that stepped aside is
// finished first, as in drainLater.
func (e *Engine) drainFair(ctx context.Context, q *scheduler) {
	if q.fair == nil {
		return
	}
	// The turns that stepped aside are finished side by side, as the
	// workers would have: one after another they could outlast the grace
	// period, and each one not finished calls its Bridge again.
	sem := make(chan struct{}, max(1, e.cfg.Workers))
	var wg sync.WaitGroup
	for _, j := range q.fair.drain() {
		if j.aside == nil || ctx.Err() != nil {
			_ = j.msg.Nak()
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if ctx.Err() != nil {
				_ = j.msg.Nak()
				return
			}
			v, err := e.finishAside(ctx, j.aside)
			e.settle(ctx, j, v, err, nil)
		}()
	}
	wg.Wait()
}

// drainLater finishes the turns that stepped aside and still wait in q
// when the engine stops: each holds a Bridge answer that is lost unless
// recorded now (its run would then call the Bridge again). Once ctx ends
// (the grace period), the rest go back to the server.
func (e *Engine) drainLater(ctx context.Context, q *scheduler) {
	for {
		select {
		case j := <-q.later:
			if ctx.Err() != nil {
				_ = j.msg.Nak()
				continue
			}
			v, err := e.finishAside(ctx, j.aside)
			e.settle(ctx, j, v, err, nil)
		default:
			return
		}
	}
}

// handler takes one job of a consumer: a turn of a run, a fan-out, a
// tick. Its error means only a failure, and then its verdict is unused.
type handler func(context.Context, job) (verdict, error)

// doneWhenNil is the handler of work that ends done when handle succeeds.
func doneWhenNil(handle func(context.Context, jetstream.Msg) error) handler {
	return func(ctx context.Context, j job) (verdict, error) { return finished, handle(ctx, j.msg) }
}

// process runs one job's handler, telling the server meanwhile that its
// message is worked on, and settles it.
func (e *Engine) process(ctx context.Context, j job, handle handler, q *scheduler) {
	stop := eventlog.KeepAlive(j.msg, e.cfg.AckWait/3)
	v, err := handle(ctx, j)
	stop()
	e.settle(ctx, j, v, err, q)
}

// settle acts on a job's verdict, or on its failure:
//
//   - a failure (an infrastructure error) leaves the message for
//     redelivery after a backoff, a bounded number of times (see failed);
//     after ctx ended (the engine stops: not the work's fault), after a
//     second;
//   - done and yield acknowledge it;
//   - aside queues the turn in q's later queue; with q full or nil (the
//     engine stops), the turn finishes at once and that is settled;
//   - hold keeps the message until its instant, then passes it to q's
//     wake queue (with no q, the server keeps it until then);
//   - retry gives it back to the server until its instant.
func (e *Engine) settle(ctx context.Context, j job, v verdict, err error, q *scheduler) {
	m := j.msg
	switch {
	case err != nil && ctx.Err() != nil:
		_ = m.NakWithDelay(time.Second)
	case err != nil:
		e.failed(ctx, m, err)
	case v.kind == verdictAside:
		later := job{msg: m, aside: v.turn}
		if q != nil && q.putLater(later) {
			return
		}
		stop := eventlog.KeepAlive(m, e.cfg.AckWait/3)
		v, err = e.finishAside(ctx, v.turn)
		stop()
		e.settle(ctx, later, v, err, q)
	case v.kind == verdictHold && q != nil:
		q.hold(m, v.at.Sub(e.now()))
	case v.kind == verdictHold, v.kind == verdictRetry:
		_ = m.NakWithDelay(max(0, v.at.Sub(e.now())))
	default:
		e.failures.succeeded(m)
		_ = m.Ack()
	}
}

// parseWork splits a work subject (prefix + tenant + "." + token(id)).
func parseWork(subject, prefix string) (tenant, id string, err error) {
	rest, ok := strings.CutPrefix(subject, prefix)
	if !ok {
		return "", "", fmt.Errorf("engine: not a %s subject: %q", prefix, subject)
	}
	tenant, tok, ok := strings.Cut(rest, ".")
	if !ok {
		return "", "", fmt.Errorf("engine: malformed work subject %q", subject)
	}
	id, err = eventlog.DecodeToken(tok)
	return tenant, id, err
}

func (e *Engine) now() time.Time { return e.cfg.Now() }

// isCanceled reports whether err only says the engine is stopping.
func isCanceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
