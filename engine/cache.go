package engine

import (
	"sync"

	"github.com/heraldhq/herald/runstate"
)

// stateCache keeps folded run states between steps, bounded by their
// estimated bytes (a miss only costs a re-read of the run). A state is only
// read or changed by the holder of its run's lock.
type stateCache struct {
	runs *byteCache[*runstate.State]
	// locks are the runs' locks, while someone holds or waits for them.
	locksMu sync.Mutex
	locks   map[string]*runLock
}

// runLock is one run's lock and how many hold or wait for it.
type runLock struct {
	sync.Mutex
	n int
}

func newStateCache(maxBytes int64) *stateCache {
	return &stateCache{runs: newByteCache(maxBytes, stateBytes)}
}

// stateBytes estimates the memory a state holds: a fixed part, then what
// grows with the run (its steps and their outputs, its signals).
func stateBytes(_ string, s *runstate.State) int64 {
	n := 512 + len(s.RunID) + len(s.TenantID) + len(s.TransactionID) + len(s.WorkflowID) + len(s.WaitEvent) + len(s.Digest) + len(s.Subscriber)
	for _, st := range s.Steps {
		n += 112 + len(st.StepID) + len(st.Type) + len(st.Status) + len(st.Output)
		if st.Error != nil {
			n += 48 + len(st.Error.Code) + len(st.Error.Message)
		}
	}
	for _, sig := range s.Signals {
		n += 72 + len(sig.Event) + len(sig.Payload)
	}
	if s.Error != nil {
		n += 48 + len(s.Error.Code) + len(s.Error.Message)
	}
	return int64(n)
}

// lock serialises the workers of one run inside this process. Each run
// has a lock of its own: a run never waits for another run's turn.
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
	st, _ := c.runs.get(runID)
	return st
}

func (c *stateCache) put(s *runstate.State) {
	if s.Status.Finished() {
		c.runs.drop(s.RunID)
		return
	}
	c.runs.put(s.RunID, s)
}

// size is how many states the cache holds.
func (c *stateCache) size() int { return c.runs.len() }

func (c *stateCache) drop(runID string) { c.runs.drop(runID) }

// payloadBytes estimates the memory of a cached trigger payload.
func payloadBytes(k string, v []byte) int64 { return int64(64 + len(k) + len(v)) }
