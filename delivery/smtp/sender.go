package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
)

// Options tunes a Sender. The zero value is ready to use.
type Options struct {
	// DialTimeout bounds the TCP connect. Zero means 10s.
	DialTimeout time.Duration
	// CommandTimeout bounds the wait for each server reply, including the
	// greeting, a TLS handshake and the reply to the message body. Zero
	// means 30s.
	CommandTimeout time.Duration
	// TLSConfig is cloned for each connection, with ServerName set to
	// Config.Host. Set RootCAs to trust a private CA. Nil means the system
	// roots.
	TLSConfig *tls.Config
	// LocalName is the name the client gives in EHLO/HELO. Empty means
	// "localhost".
	LocalName string
	// MaxIdlePerChannel is how many idle sessions are kept per channel.
	// Zero means 2; negative keeps none, so every Send opens a connection.
	MaxIdlePerChannel int
	// MaxOpenPerChannel bounds the sessions open at once per channel, busy
	// and idle: a Send that finds them all busy waits for one (bounded by
	// its ctx) instead of opening more, so a busy process neither floods
	// the provider with connections (many relays refuse more than a few
	// dozen per client) nor opens and quits a session per message. Set it
	// no higher than MaxIdlePerChannel to keep every session it opens.
	// Zero means no bound.
	MaxOpenPerChannel int
	// CheckAfterIdle is how long a session may sit idle and still be reused
	// without a NOOP first. A session that broke meanwhile fails at MAIL,
	// before any of the message was sent, and the message goes out on a
	// new session (see the package doc), so the check only saves that
	// detour for sessions likely to be stale. Zero means 1s; negative
	// checks every reuse.
	CheckAfterIdle time.Duration
	// IdleTimeout is how long an idle session is kept. Zero means 30s.
	IdleTimeout time.Duration
	// DialContext opens the TCP connection to the server, within
	// DialTimeout: the egress policy's dialer (egress.Policy.Dialer), so a
	// channel cannot reach the operator's network. A dial it refuses
	// (egress.ErrRefused) fails the send as ErrRejected: retrying cannot
	// help. Nil: a plain net.Dialer.
	DialContext func(ctx context.Context, network, address string) (net.Conn, error)
}

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"DialTimeout", o.DialTimeout}, {"CommandTimeout", o.CommandTimeout}, {"IdleTimeout", o.IdleTimeout}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("smtp: options: %s %v is negative", d.name, d.d))
		}
	}
	if strings.ContainsFunc(o.LocalName, isSpaceOrControl) {
		errs = append(errs, fmt.Errorf("smtp: options: LocalName %q contains white space or control characters", o.LocalName))
	}
	return errors.Join(errs...)
}

func (o *Options) setDefaults() {
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.CommandTimeout == 0 {
		o.CommandTimeout = 30 * time.Second
	}
	if o.LocalName == "" {
		o.LocalName = "localhost"
	}
	switch {
	case o.MaxIdlePerChannel == 0:
		o.MaxIdlePerChannel = 2
	case o.MaxIdlePerChannel < 0:
		o.MaxIdlePerChannel = 0
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 30 * time.Second
	}
	if o.MaxOpenPerChannel < 0 {
		o.MaxOpenPerChannel = 0
	}
	if o.CheckAfterIdle == 0 {
		o.CheckAfterIdle = time.Second
	}
}

// Sender sends messages over SMTP and keeps sessions open for reuse between
// sends of the same channel. It is safe for concurrent use; concurrent sends
// of one channel use separate sessions. Close it to end its idle sessions.
type Sender struct {
	opts Options
	pool *pool
}

// NewSender returns a Sender with opts. It panics if opts.Validate fails:
// options are the program's, not its users'.
func NewSender(opts Options) *Sender {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	opts.setDefaults()
	return &Sender{opts: opts, pool: newPool(opts.MaxIdlePerChannel, opts.MaxOpenPerChannel, opts.IdleTimeout)}
}

// Send delivers msg through the channel cfg and returns the Message-ID the
// message carries. ctx bounds the whole attempt: when it ends, the session
// in use is closed and Send returns.
//
// The error matches ErrInvalid (cfg or msg failed Validate; nothing was
// sent), ErrRejected (permanent: a 5xx reply, see the package doc),
// ErrUnavailable (transient: 4xx reply, network, TLS, timeout, ctx), or
// ErrClosed, and one of the provider kinds (see the package doc). Failures
// of the exchange are an *Error. A broken reused session
// is replaced and the message sent again only if the failure came before
// the server accepted DATA, so Send never delivers a message twice; after
// that point a lost reply is reported as ErrUnavailable although the server
// may have accepted the message.
func (s *Sender) Send(ctx context.Context, cfg Config, msg Message) (Result, error) {
	if err := cfg.Validate(); err != nil {
		// A channel that cannot work: another channel may.
		return Result{}, &kinded{errors.Join(err, msg.Validate()), provider.ErrNotSent}
	}
	if err := msg.Validate(); err != nil {
		// The same message fails on every channel.
		return Result{}, &kinded{err, provider.ErrRejected}
	}
	red := newRedactor(cfg)
	if err := ctx.Err(); err != nil {
		return Result{}, newError(ctx, "", err, red)
	}
	data, id, err := compose(cfg, msg, time.Now())
	if err != nil {
		return Result{}, &kinded{err, provider.ErrRejected}
	}
	key := cfg.key()

	for retried := false; ; retried = true {
		c, reused, err := s.acquire(ctx, key, cfg, red, retried)
		if errors.Is(err, ErrClosed) {
			return Result{}, &kinded{err, provider.ErrNotSent}
		}
		if err != nil {
			return Result{}, err
		}
		stop := context.AfterFunc(ctx, func() { c.raw.Close() })
		tx := c.send(cfg.FromEmail, msg.To, data)
		keep := tx.err == nil || c.recover(tx.err)
		if !stop() { // ctx ended: c.raw is closed or closing
			keep = false
		}
		if keep {
			s.pool.put(key, c)
		} else {
			s.pool.discard(key, c)
		}
		if tx.err == nil {
			return Result{MessageID: id}, nil
		}
		if reused && !retried && !tx.bodyStarted && brokenSession(tx.err) && ctx.Err() == nil {
			continue
		}
		e := newError(ctx, tx.command, tx.err, red)
		e.BodyStarted = tx.bodyStarted
		return Result{}, e
	}
}

// acquire returns a session for key: an idle one (which must answer NOOP
// first when it idled longer than Options.CheckAfterIdle), or, when there
// is none or fresh is set, a new one. reused reports which. With
// Options.MaxOpenPerChannel sessions busy it waits for one. It fails with
// ErrClosed after Close, unless fresh is set (a retry within a Send that
// started before Close).
func (s *Sender) acquire(ctx context.Context, key string, cfg Config, red redactor, fresh bool) (c *conn, reused bool, err error) {
	if fresh {
		s.pool.reserveFresh(key)
	}
	for !fresh {
		idle, reserved, err := s.pool.take(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, newError(ctx, "connect", err, red)
			}
			return nil, false, err
		}
		if reserved {
			break
		}
		if s.opts.CheckAfterIdle > 0 && time.Since(idle.lastUsed) < s.opts.CheckAfterIdle {
			return idle, true, nil
		}
		stop := context.AfterFunc(ctx, func() { idle.raw.Close() })
		err = idle.client.Noop()
		if stop() && err == nil {
			return idle, true, nil
		}
		s.pool.discard(key, idle)
		if ctx.Err() != nil {
			return nil, false, newError(ctx, "NOOP", ctx.Err(), red)
		}
	}
	c, err = s.dial(ctx, cfg, red)
	if err != nil {
		s.pool.unreserve(key)
	}
	return c, false, err
}

// Close ends the idle sessions; Send fails with ErrClosed from then on.
// Sends in flight finish and close their sessions. Close is idempotent and
// always returns nil.
func (s *Sender) Close() error {
	s.pool.close()
	return nil
}
