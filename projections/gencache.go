package projections

import (
	"sync"
	"sync/atomic"
)

// genCache keeps rows read on every request decoded (a tenant's Bridge
// binding, an API key) until a batch applies an event that may change
// one: the batch, once committed, moves the generation (invalidate), and
// a row read at an older generation is read again. A row read while a
// batch commits is kept with the generation before it, so it is read
// again at the next call. The projector is the rows' only writer.
type genCache[T any] struct {
	gen atomic.Uint64
	mu  sync.Mutex
	m   map[string]genEntry[T]
}

type genEntry[T any] struct {
	gen uint64
	v   T
}

// maxGenCached bounds a cache: past it, it starts again empty.
const maxGenCached = 4096

// get returns k's row, from the cache or by read (whose errors, not
// found included, are not kept).
func (c *genCache[T]) get(k string, read func() (T, error)) (T, error) {
	gen := c.gen.Load()
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && e.gen == gen {
		return e.v, nil
	}
	v, err := read()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxGenCached {
		c.m = make(map[string]genEntry[T])
	}
	c.m[k] = genEntry[T]{gen: gen, v: v}
	c.mu.Unlock()
	return v, nil
}

// invalidate makes every row kept so far read again.
func (c *genCache[T]) invalidate() { c.gen.Add(1) }
