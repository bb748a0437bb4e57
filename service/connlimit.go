package service

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter caps the open connections of one listener (HERALD_MAX_CONNS)
// and, at the cap, makes room for a new connection by closing one that
// holds a slot without a request in hand:
//
//   - the one idle longest: an idle keep-alive connection (a client
//     between requests) costs a slot until HERALD_HTTP_IDLE_TIMEOUT;
//     counted like a busy one, a client holding one cheap request per
//     socket could take every slot, so that even GET /healthz waits;
//   - else the oldest that has not sent a whole request within
//     capHeaderTimeout of opening (HERALD_HTTP_CAP_HEADER_TIMEOUT):
//     silent sockets, or sockets sending their headers a byte at a time,
//     would otherwise hold their slots until the server's header timeout,
//     and a client opening them as fast as they close would lock every
//     other client out.
//
// Busy connections (a request in progress, an inbox stream) are never
// closed for room: a new connection then waits, accepted, until one
// closes, goes idle or its first request is overdue.
//
// Serve a server with it through serveLimited, which also gives the
// server its ConnState hook.
type connLimiter struct {
	net.Listener
	max int
	// capHeaderTimeout is how long a new connection may take to send its
	// first whole request before, at the cap, it may be closed for room.
	capHeaderTimeout time.Duration

	mu   sync.Mutex
	open int
	// idle lists the idle connections, longest idle first.
	idle *list.List
	// fresh lists the connections that have not sent a whole request yet
	// (http.StateNew), oldest first.
	fresh *list.List
	// changed wakes an Accept waiting for room: a connection closed or
	// went idle.
	changed chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func newConnLimiter(l net.Listener, max int, capHeaderTimeout time.Duration) *connLimiter {
	return &connLimiter{Listener: l, max: max, capHeaderTimeout: capHeaderTimeout, idle: list.New(), fresh: list.New(),
		changed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// serveLimited serves srv on l with at most max open connections (see
// connLimiter).
func serveLimited(srv *http.Server, l net.Listener, max int, capHeaderTimeout time.Duration) error {
	lim := newConnLimiter(l, max, capHeaderTimeout)
	srv.ConnState = lim.connState
	return srv.Serve(lim)
}

// Accept waits for a connection, then for room for it: a free slot, or a
// connection without a request in hand, which it closes.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			lc := &limitedConn{Conn: c, l: l, opened: time.Now()}
			lc.fresh = l.fresh.PushBack(lc)
			l.mu.Unlock()
			return lc, nil
		}
		victim, wait := l.victim()
		l.mu.Unlock()
		if victim != nil {
			victim.Close() // frees its slot
			continue
		}
		var overdue <-chan time.Time
		var timer *time.Timer
		if wait > 0 {
			timer = time.NewTimer(wait)
			overdue = timer.C
		}
		select {
		case <-l.changed:
		case <-overdue:
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// victim returns the connection to close for room, or nil and how long
// until the oldest fresh one is overdue (zero: none is fresh); l.mu is
// held.
func (l *connLimiter) victim() (*limitedConn, time.Duration) {
	if e := l.idle.Front(); e != nil {
		return e.Value.(*limitedConn), 0
	}
	e := l.fresh.Front()
	if e == nil {
		return nil, 0
	}
	c := e.Value.(*limitedConn)
	if wait := time.Until(c.opened.Add(l.capHeaderTimeout)); wait > 0 {
		return nil, wait
	}
	return c, 0
}

// Close closes the listener and ends an Accept waiting for room.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// connState is the server's ConnState hook: it keeps the idle list and
// takes a connection off the fresh list once it has read a whole request
// (StateActive: net/http reports it once the request's header is read),
// or is idle or closed.
func (l *connLimiter) connState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.idle != nil {
		l.idle.Remove(c.idle)
		c.idle = nil
	}
	if state != http.StateNew && c.fresh != nil {
		l.fresh.Remove(c.fresh)
		c.fresh = nil
	}
	if state == http.StateIdle && !c.closed {
		c.idle = l.idle.PushBack(c)
		l.wake()
	}
}

// wake tells an Accept waiting for room to look again; l.mu is held.
func (l *connLimiter) wake() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// limitedConn is a connection of a connLimiter: closing it frees its slot.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	opened time.Time
	// idle is its element of l.idle while it is idle, fresh its element
	// of l.fresh until it has read a whole request; closed is set by its
	// first Close. All guarded by l.mu.
	idle, fresh *list.Element
	closed      bool
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	first := !c.closed
	if first {
		c.closed = true
		if c.idle != nil {
			c.l.idle.Remove(c.idle)
			c.idle = nil
		}
		if c.fresh != nil {
			c.l.fresh.Remove(c.fresh)
			c.fresh = nil
		}
		c.l.open--
		c.l.wake()
	}
	c.l.mu.Unlock()
	return c.Conn.Close()
}
