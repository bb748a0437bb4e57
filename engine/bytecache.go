package engine

import (
	"container/list"
	"sync"
)

// byteCache is a map bounded by the estimated bytes of its entries: a put
// that passes the budget evicts the least recently used entries until it
// fits, and an entry larger than the whole budget is not kept. It is safe
// for concurrent use; the values themselves are their callers' to guard.
// A value changed in place after its put keeps its old estimate until it
// is put again.
type byteCache[V any] struct {
	mu    sync.Mutex
	max   int64
	used  int64
	size  func(key string, v V) int64
	lru   list.List // of *cacheEntry[V]; front: most recently used
	items map[string]*list.Element
}

type cacheEntry[V any] struct {
	key string
	v   V
	n   int64
}

func newByteCache[V any](max int64, size func(string, V) int64) *byteCache[V] {
	return &byteCache[V]{max: max, size: size, items: map[string]*list.Element{}}
}

func (c *byteCache[V]) get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry[V]).v, true
}

func (c *byteCache[V]) put(k string, v V) {
	n := c.size(k, v)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(k)
	if n > c.max {
		return
	}
	for c.used+n > c.max {
		c.remove(c.lru.Back().Value.(*cacheEntry[V]).key)
	}
	c.items[k] = c.lru.PushFront(&cacheEntry[V]{key: k, v: v, n: n})
	c.used += n
}

func (c *byteCache[V]) drop(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(k)
}

// remove deletes k; c.mu is held.
func (c *byteCache[V]) remove(k string) {
	el, ok := c.items[k]
	if !ok {
		return
	}
	c.lru.Remove(el)
	delete(c.items, k)
	c.used -= el.Value.(*cacheEntry[V]).n
}

// len is how many entries the cache holds.
func (c *byteCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
