package engine

import (
	"sync"

	"github.com/heraldhq/herald/runstate"
)

// stateCache keeps folded run states between steps. A state is only read
// or changed by the holder of its run's lock.
type stateCache struct {
	mu   sync.Mutex
	max  int
	runs map[string]*runstate.State
	// locks are the runs' locks, while someone holds or waits for them.
	locksMu sync.Mutex
	locks   map[string]*runLock
}

// runLock is one run's lock and how many hold or wait for it.
type runLock struct {
	sync.Mutex
	n int
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, runs: make(map[string]*runstate.State)}
}

// lock serialises the workers of one run inside this process. Each run
// has a lock of its own: a run never waits for another's turn (striped
// locks made a woken run wait behind an unrelated turn's slow append).
func (c *stateCache) lock(runID string) func() {
	c.locksMu.Lock()
	if c.locks == nil {
		c.locks = map[string]*runLock{}
	}
	l := c.locks[runID]
	if l == nil {
		l = &runLock{}
		c.locks[runID] = l
	}
	l.n++
	c.locksMu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		c.locksMu.Lock()
		if l.n--; l.n == 0 {
			delete(c.locks, runID)
		}
		c.locksMu.Unlock()
	}
}

func (c *stateCache) get(runID string) *runstate.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[runID]
}

func (c *stateCache) put(s *runstate.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.Status.Finished() {
		delete(c.runs, s.RunID)
		return
	}
	if len(c.runs) >= c.max {
		// Evict about a tenth, in map order: a miss only costs a re-read.
		n := c.max / 10
		for id := range c.runs {
			delete(c.runs, id)
			if n--; n <= 0 {
				break
			}
		}
	}
	c.runs[s.RunID] = s
}

// size is how many states the cache holds.
func (c *stateCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs)
}

func (c *stateCache) drop(runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, runID)
}

// payloadCache keeps trigger payloads by transaction: every run of a
// fan-out shares one.
type payloadCache struct {
	mu  sync.Mutex
	max int
	m   map[string][]byte
}

func (c *payloadCache) get(k string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *payloadCache) put(k string, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string][]byte)
	}
	if len(c.m) >= c.max {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[k] = v
}
