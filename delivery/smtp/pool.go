package smtp

import (
	"context"
	"slices"
	"sync"
	"time"
)

// pool keeps idle sessions per channel key and counts the sessions open
// per key, idle or busy. It is safe for concurrent use. A session taken
// with get, or opened after reserve, belongs to the caller until it hands
// it back with put or ends it with discard.
type pool struct {
	maxIdle     int // per key; 0 keeps nothing
	maxOpen     int // per key; 0: no bound
	idleTimeout time.Duration

	mu      sync.Mutex
	closed  bool
	idle    map[string][]*conn // per key, most recently used last
	open    map[string]int     // per key: sessions open or being opened
	changed chan struct{}      // closed and replaced when a session comes back or ends
}

func newPool(maxIdle, maxOpen int, idleTimeout time.Duration) *pool {
	return &pool{maxIdle: maxIdle, maxOpen: maxOpen, idleTimeout: idleTimeout,
		idle: make(map[string][]*conn), open: make(map[string]int), changed: make(chan struct{})}
}

// take returns the most recently used idle session of key, or, when there
// is none, reserves the opening of a new one (conn nil, reserved true):
// the caller opens it and either hands it to put or discard, or calls
// unreserve if it could not open it. When key has maxOpen sessions open
// already, take waits for one to come back or end, until ctx ends (its
// error is returned). It fails with ErrClosed once the pool is closed.
func (p *pool) take(ctx context.Context, key string) (c *conn, reserved bool, err error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, ErrClosed
		}
		if list := p.idle[key]; len(list) > 0 {
			c = list[len(list)-1]
			list[len(list)-1] = nil
			if list = list[:len(list)-1]; len(list) == 0 {
				delete(p.idle, key)
			} else {
				p.idle[key] = list
			}
			p.mu.Unlock()
			c.idle.Stop() // if it fired already, expire finds c gone and leaves it
			return c, false, nil
		}
		if p.maxOpen <= 0 || p.open[key] < p.maxOpen {
			p.open[key]++
			p.mu.Unlock()
			return nil, true, nil
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// reserveFresh counts a new session of key opened whatever the bound: the
// one retry of a Send whose reused session broke (it gave that session
// back with discard first, so the count stays within the bound).
func (p *pool) reserveFresh(key string) {
	p.mu.Lock()
	p.open[key]++
	p.mu.Unlock()
}

// unreserve gives back a reservation whose session could not be opened.
func (p *pool) unreserve(key string) {
	p.mu.Lock()
	p.release(key)
	p.mu.Unlock()
}

// release counts one session of key less and wakes the waiters. p.mu is
// held.
func (p *pool) release(key string) {
	if p.open[key]--; p.open[key] <= 0 {
		delete(p.open, key)
	}
	p.notify()
}

func (p *pool) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// put takes c back as an idle session of key, or ends it when the pool is
// closed or key has maxIdle idle sessions already.
func (p *pool) put(key string, c *conn) {
	p.mu.Lock()
	if p.closed || len(p.idle[key]) >= p.maxIdle {
		p.release(key)
		p.mu.Unlock()
		c.quit()
		return
	}
	c.lastUsed = time.Now()
	p.idle[key] = append(p.idle[key], c)
	c.idle = time.AfterFunc(p.idleTimeout, func() { p.expire(key, c) })
	p.notify()
	p.mu.Unlock()
}

// discard ends c, a session of key taken from the pool or opened after a
// reservation, at once.
func (p *pool) discard(key string, c *conn) {
	c.raw.Close()
	p.mu.Lock()
	p.release(key)
	p.mu.Unlock()
}

// expire ends c if it is still idle.
func (p *pool) expire(key string, c *conn) {
	p.mu.Lock()
	list := p.idle[key]
	i := slices.Index(list, c)
	if i < 0 {
		p.mu.Unlock()
		return
	}
	if list = slices.Delete(list, i, i+1); len(list) == 0 {
		delete(p.idle, key)
	} else {
		p.idle[key] = list
	}
	p.release(key)
	p.mu.Unlock()
	c.quit()
}

// close ends every idle session and makes take fail from now on. Later
// calls do nothing.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	var all []*conn
	for key, list := range p.idle {
		all = append(all, list...)
		for range list {
			p.release(key)
		}
	}
	p.idle = nil
	p.notify()
	p.mu.Unlock()

	var wg sync.WaitGroup
	for _, c := range all {
		c.idle.Stop()
		wg.Go(c.quit)
	}
	wg.Wait()
}
