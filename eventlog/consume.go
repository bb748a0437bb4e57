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
)

// Durable describes a durable pull consumer to consume for as long as a
// context lives: see Consume.
type Durable struct {
	// Stream is the stream's name. Required.
	Stream string
	// Config is the consumer's configuration (Durable names it). Required.
	Config jetstream.ConsumerConfig
	// Handler takes each message. It may block (back pressure): a handler
	// under way is never taken for a stall.
	Handler jetstream.MessageHandler
	// Options are the pull options of the consumption (batch, heartbeat).
	Options []jetstream.PullConsumeOpt
	// Logger receives the consumption's warnings. Zero: slog.Default().
	Logger *slog.Logger
	// StallAfter is how long the consumption may receive nothing while the
	// server holds messages it could deliver before it is started anew.
	// Zero: DefaultStallAfter.
	StallAfter time.Duration
	// Restarted is called each time the consumption is started anew after
	// a failure or a stall, with the reason: a metrics hook. Zero: none.
	Restarted func(consumer, reason string)
}

// DefaultStallAfter is Durable.StallAfter's default: several pull
// heartbeats, so that a consumption the client library is still
// re-establishing on its own is not cut short.
const DefaultStallAfter = 10 * time.Second

// Consumption is a durable consumer being consumed; see Consume.
type Consumption struct {
	d      Durable
	js     jetstream.JetStream
	stop   context.CancelFunc
	done   chan struct{}
	taken  atomic.Uint64 // messages handed to Handler
	busy   atomic.Int32  // Handler calls under way
	kick   chan string   // a reason to start the consumption anew
	check  chan struct{} // heartbeats missed: is the consumer still there?
	mu     sync.Mutex
	cc     jetstream.ConsumeContext
	cons   jetstream.Consumer
	closed bool
}

// Consume creates (or updates) the durable consumer d describes and
// consumes it until ctx ends or Stop is called. Unlike a bare
// jetstream.Consumer.Consume, a consumption survives what losing a NATS node
// does to it: the consumer is created again, with retries, while the
// cluster elects new leaders; a consumption that ended on an error the
// client library does not recover from (the consumer deleted, a bad
// request) is started anew; and one that receives nothing while the server
// holds messages for it and room to deliver them (a pull lost with its
// node) is started anew after d.StallAfter. Each of these is logged.
//
// Consume returns once the consumer exists and is consumed, with an error
// when its configuration is refused, or with ctx's error when ctx ends
// first.
func Consume(ctx context.Context, js jetstream.JetStream, d Durable) (*Consumption, error) {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.StallAfter <= 0 {
		d.StallAfter = DefaultStallAfter
	}
	c := &Consumption{d: d, js: js, done: make(chan struct{}), kick: make(chan string, 1), check: make(chan struct{}, 1)}
	if err := c.start(ctx, false); err != nil {
		return nil, err
	}
	ctx, c.stop = context.WithCancel(ctx)
	go c.watch(ctx)
	return c, nil
}

// Stop ends the consumption: no message is handed to Handler once it
// returns, but for those already under way.
func (c *Consumption) Stop() {
	c.stop()
	<-c.done
	c.mu.Lock()
	c.closed = true
	if c.cc != nil {
		c.cc.Stop()
	}
	c.mu.Unlock()
}

// start creates the consumer, retrying until it exists or ctx ends, and
// consumes it. The first start (again false) gives up on an error no retry
// mends (a configuration the server refuses: the caller's to hear); a
// start again retries those too, logged as errors: the server accepted the
// same configuration before, so what it refuses now (a stream changed
// under the consumer, a deletion not yet finished) may pass later, and a
// consumption that gave up would leave its work undelivered, silently.
func (c *Consumption) start(ctx context.Context, again bool) error {
	name := c.d.Config.Durable
	pause := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		try, cancel := context.WithTimeout(ctx, attemptTimeout)
		cons, err := c.js.CreateOrUpdateConsumer(try, c.d.Stream, c.d.Config)
		cancel()
		if err == nil {
			var cc jetstream.ConsumeContext
			cc, err = cons.Consume(c.handle, append(c.d.Options, jetstream.ConsumeErrHandler(c.failed))...)
			if err == nil {
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.closed {
					cc.Stop()
					return nil
				}
				c.cons, c.cc = cons, cc
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		refused := permanent(err)
		if refused && !again {
			return fmt.Errorf("eventlog: consumer %s: %w", name, err)
		}
		switch {
		case attempt != 1 && attempt%20 != 0:
		case refused:
			c.d.Logger.Error("consumer refused by the server; trying again", "consumer", name, "attempt", attempt, "err", err)
		default:
			c.d.Logger.Warn("consumer not available; trying again", "consumer", name, "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// permanent reports whether creating or consuming a consumer failed for a
// reason no retry mends: an invalid option or configuration, as opposed to
// a cluster without a leader or a node that does not answer.
func permanent(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 400
	}
	return errors.Is(err, jetstream.ErrInvalidOption) || errors.Is(err, jetstream.ErrHandlerRequired)
}

func (c *Consumption) handle(m jetstream.Msg) {
	c.busy.Add(1)
	defer c.busy.Add(-1)
	c.taken.Add(1)
	c.d.Handler(m)
}

// failed is the consumption's error handler. The client library recovers
// from missed heartbeats, reconnects and leadership changes on its own;
// the errors that say the consumer is gone are handed to watch.
func (c *Consumption) failed(_ jetstream.ConsumeContext, err error) {
	switch {
	case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound),
		errors.Is(err, jetstream.ErrBadRequest),
		// A pull nobody answers: the consumer is gone (deleted while no
		// pull was waiting to hear it) or its node is; creating it again
		// is idempotent and retried while the cluster elects.
		errors.Is(err, nats.ErrNoResponders):
		select {
		case c.kick <- err.Error():
		default:
		}
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		// The library pulls again; whether the consumer is still there
		// to answer is watch's to ask.
		select {
		case c.check <- struct{}{}:
		default:
		}
	case errors.Is(err, nats.ErrConnectionClosed):
		// The connection is gone for good: the service reports it.
	default:
		c.d.Logger.Debug("consumer error; the client recovers", "consumer", c.d.Config.Durable, "err", err)
	}
}

// watch starts the consumption anew when failed says it ended, or when it
// has stalled: nothing taken for StallAfter, no handler under way, while
// the server holds messages it may deliver.
func (c *Consumption) watch(ctx context.Context) {
	defer close(c.done)
	check := max(c.d.StallAfter/4, 50*time.Millisecond)
	tick := time.NewTicker(check)
	defer tick.Stop()
	last, quietSince := c.taken.Load(), time.Now()
	// asking: heartbeats were missed and the server has not yet answered
	// whether the consumer is still there (a loaded or electing server
	// lets the question time out): it is asked again at each tick.
	asking := false
	for {
		var reason string
		select {
		case <-ctx.Done():
			return
		case reason = <-c.kick:
		case <-c.check:
			gone, known := c.gone(ctx)
			if asking = !known; !gone {
				continue
			}
			reason = "its consumer is gone"
		case now := <-tick.C:
			if asking {
				gone, known := c.gone(ctx)
				if asking = !known; gone {
					reason = "its consumer is gone"
					break
				}
			}
			if n := c.taken.Load(); n != last || c.busy.Load() > 0 {
				last, quietSince = n, now
				continue
			}
			if now.Sub(quietSince) < c.d.StallAfter || !c.deliverable(ctx) {
				continue
			}
			reason = "stalled: nothing delivered while the server holds messages"
		}
		asking = false
		c.d.Logger.Warn("consumer stopped receiving; consuming it anew", "consumer", c.d.Config.Durable, "reason", reason)
		c.mu.Lock()
		c.cc.Stop()
		c.mu.Unlock()
		if err := c.start(ctx, true); err != nil {
			return // ctx ended
		}
		if c.d.Restarted != nil {
			c.d.Restarted(c.d.Config.Durable, reason)
		}
		last, quietSince = c.taken.Load(), time.Now()
	}
}

// gone reports whether the server answers that the consumer does not
// exist; known is false when it gave no answer.
func (c *Consumption) gone(ctx context.Context) (gone, known bool) {
	_, err := c.info(ctx)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true, true
	}
	return false, err == nil
}

// deliverable reports whether the server holds messages for the consumer
// that it may deliver now: some pending and fewer unacknowledged than the
// consumer's bound. A consumer the server no longer has counts as
// deliverable (it must be created again); a server that does not answer
// (an election under way) does not.
func (c *Consumption) deliverable(ctx context.Context) bool {
	info, err := c.info(ctx)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	limit := info.Config.MaxAckPending
	return info.NumPending > 0 && (limit <= 0 || info.NumAckPending < limit)
}

// info asks the server for the current consumer's info, one try.
func (c *Consumption) info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	c.mu.Lock()
	cons := c.cons
	c.mu.Unlock()
	try, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	return cons.Info(try)
}
