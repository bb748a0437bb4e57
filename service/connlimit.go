package service

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// connLimiter caps the open connections of one listener (HERALD_MAX_CONNS)
// and, at the cap, makes room for a new connection by closing the one
// that has been idle longest. An idle keep-alive connection (a client
// between requests) costs a slot until HERALD_HTTP_IDLE_TIMEOUT; counted
// like a busy one, a client holding one cheap request per socket could
// take every slot, so that even GET /healthz waits. Busy connections (a
// request in progress, an inbox stream) are never closed for room: a new
// connection then waits, accepted, until one closes or goes idle.
//
// Serve a server with it through serveLimited, which also gives the
// server its ConnState hook.
type connLimiter struct {
	net.Listener
	max int

	mu   sync.Mutex
	open int
	// idle lists the idle connections, longest idle first.
	idle *list.List
	// changed wakes an Accept waiting for room: a connection closed or
	// went idle.
	changed chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func newConnLimiter(l net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: l, max: max, idle: list.New(),
		changed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// serveLimited serves srv on l with at most max open connections (see
// connLimiter).
func serveLimited(srv *http.Server, l net.Listener, max int) error {
	lim := newConnLimiter(l, max)
	srv.ConnState = lim.connState
	return srv.Serve(lim)
}

// Accept waits for a connection, then for room for it: a free slot, or
// the longest idle connection, which it closes.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if l.open < l.max {
			l.open++
			l.mu.Unlock()
			return &limitedConn{Conn: c, l: l}, nil
		}
		var victim *limitedConn
		if e := l.idle.Front(); e != nil {
			victim = e.Value.(*limitedConn)
		}
		l.mu.Unlock()
		if victim != nil {
			victim.Close() // frees its slot
			continue
		}
		select {
		case <-l.changed:
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// Close closes the listener and ends an Accept waiting for room.
func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// connState is the server's ConnState hook: it keeps the idle list.
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
	l *connLimiter
	// idle is its element of l.idle while it is idle; closed is set by
	// its first Close. Both guarded by l.mu.
	idle   *list.Element
	closed bool
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
		c.l.open--
		c.l.wake()
	}
	c.l.mu.Unlock()
	return c.Conn.Close()
}
