package smtp

import (
	"slices"
	"sync"
	"time"
)

// pool keeps idle sessions per channel key. It is safe for concurrent use.
// A session taken with get belongs to the caller until it hands it back with
// put or closes it.
type pool struct {
	maxIdle     int // per key; 0 keeps nothing
	idleTimeout time.Duration

	mu     sync.Mutex
	closed bool
	idle   map[string][]*conn // per key, most recently used last
}

func newPool(maxIdle int, idleTimeout time.Duration) *pool {
	return &pool{maxIdle: maxIdle, idleTimeout: idleTimeout, idle: make(map[string][]*conn)}
}

// get takes the most recently used idle session of key, nil if there is
// none. It fails with ErrClosed once the pool is closed.
func (p *pool) get(key string) (*conn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	list := p.idle[key]
	if len(list) == 0 {
		return nil, nil
	}
	c := list[len(list)-1]
	list[len(list)-1] = nil
	if list = list[:len(list)-1]; len(list) == 0 {
		delete(p.idle, key)
	} else {
		p.idle[key] = list
	}
	c.idle.Stop() // if it fired already, expire finds c gone and leaves it
	return c, nil
}

// put takes c back as an idle session of key, or ends it when the pool is
// closed or key has maxIdle idle sessions already.
func (p *pool) put(key string, c *conn) {
	p.mu.Lock()
	if p.closed || len(p.idle[key]) >= p.maxIdle {
		p.mu.Unlock()
		c.quit()
		return
	}
	p.idle[key] = append(p.idle[key], c)
	c.idle = time.AfterFunc(p.idleTimeout, func() { p.expire(key, c) })
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
	p.mu.Unlock()
	c.quit()
}

// close ends every idle session and makes get fail from now on. Later calls
// do nothing.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	var all []*conn
	for _, list := range p.idle {
		all = append(all, list...)
	}
	p.idle = nil
	p.mu.Unlock()

	var wg sync.WaitGroup
	for _, c := range all {
		c.idle.Stop()
		wg.Go(c.quit)
	}
	wg.Wait()
}
