package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// A run's lock serialises that run's workers only: holding one run's lock
// never delays another run, whatever their ids.
func TestRunLocksAreTheRunsOwn(t *testing.T) {
	t.Parallel()
	c := newStateCache(10 << 10)
	unlock := c.lock("run_held")
	var wg sync.WaitGroup
	for i := range 2000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.lock(fmt.Sprintf("run_%d", i))()
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("other runs waited for a run's lock")
	}
	// The same run waits until the lock is released.
	got := make(chan struct{})
	go func() {
		c.lock("run_held")()
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second holder of the same run did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	<-got
	c.locksMu.Lock()
	defer c.locksMu.Unlock()
	if len(c.locks) != 0 {
		t.Fatalf("%d locks left after every holder released", len(c.locks))
	}
}
