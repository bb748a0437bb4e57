package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testwait"
)

func TestCrowdedBy(t *testing.T) {
	// Buckets of 0-0.5 ms, 0.5-1 ms, 1-2 ms and 2 ms up.
	buckets := []float64{0, 0.0005, 0.001, 0.002, 1}
	for _, c := range []struct {
		name         string
		prev, counts []uint64
		want         bool
	}{
		{"no wait since", []uint64{5, 5, 5, 5}, []uint64{5, 5, 5, 5}, false},
		{"all short", []uint64{0, 0, 0, 0}, []uint64{900, 100, 0, 0}, false},
		{"under the share", []uint64{0, 0, 0, 0}, []uint64{960, 1, 3, 0}, false},
		{"at the share", []uint64{0, 0, 0, 0}, []uint64{900, 50, 40, 10}, true},
		{"only this interval counts", []uint64{0, 0, 1000, 1000}, []uint64{1000, 0, 1000, 1000}, false},
		{"long waits this interval", []uint64{1000, 0, 0, 0}, []uint64{1000, 0, 0, 1}, true},
		{"a first reading", nil, []uint64{10, 0, 0, 1}, true},
	} {
		if got := crowdedBy(c.prev, c.counts, buckets); got != c.want {
			t.Errorf("%s: crowded %v, want %v", c.name, got, c.want)
		}
	}
}

// A crowded reading holds for crowdHold, and each one starts it again.
func TestCrowdHeld(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var c crowdHeld
	for _, step := range []struct {
		at      time.Duration
		crowded bool
		want    bool
	}{
		{0, false, false},
		{crowdEvery, true, true},
		{2 * crowdEvery, false, true},
		{crowdEvery + crowdHold - time.Nanosecond, false, true},
		{crowdEvery + crowdHold, false, false},
		{2 * crowdHold, true, true},
		{2*crowdHold + crowdHold/2, true, true},
		{3*crowdHold + crowdHold/2 - time.Nanosecond, false, true},
		{3*crowdHold + crowdHold/2, false, false},
	} {
		if got := c.read(step.crowded, t0.Add(step.at)); got != step.want {
			t.Errorf("at %v (reading crowded %v): crowded %v, want %v", step.at, step.crowded, got, step.want)
		}
	}
}

// The runtime measures its scheduling latencies: with more goroutines
// spinning than cores, the watch reads the process crowded. (That it reads
// it uncrowded again is crowdedBy's: a loaded machine may crowd any
// process.)
func TestCrowdWatchReadsTheRuntime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c crowd
	go c.watch(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					for i := 0; i < 1e5; i++ {
						_ = fmt.Sprint(i)
					}
				}
			}
		}()
	}
	testwait.For(t, "crowded", c.crowded)
	close(stop)
	wg.Wait()
}

// While crowded and another tenant has turns under way (or had within
// mixedHold), a tenant gets at most its share: a tenant alone, or an
// uncrowded process, gets the whole limit. A tenant above its share hands
// no place to its parked work as its turns end, until it is under it;
// when its limit grows again, its parked work takes the room.
func TestFairHoldsATenantToItsShareWhileCrowdedAndMixed(t *testing.T) {
	t.Parallel()
	f := newFair(4, 0)
	f.share = 1
	crowded, now := true, time.Unix(1000, 0)
	f.crowded = func() bool { return crowded }
	f.now = func() time.Time { return now }
	a := make([]job, 8)
	for i := range a {
		a[i] = job{msg: newRunMsg("ten_a", fmt.Sprint("a", i))}
	}
	b := job{msg: newRunMsg("ten_b", "b0")}
	for i := range 4 {
		if !f.admit(a[i]) {
			t.Fatalf("ten_a alone, crowded: a%d not admitted under the limit", i)
		}
	}
	if f.admit(a[4]) {
		t.Fatal("admitted past the limit")
	}
	if !f.admit(b) {
		t.Fatal("ten_b's first turn not admitted")
	}
	if f.admit(a[5]) {
		t.Fatal("ten_a admitted past its share with ten_b under way")
	}
	// ten_a's turns end: nothing of its goes on until it is under its
	// share of 1.
	for i := range 3 {
		f.leave(a[i])
		if len(f.ready) != 0 {
			t.Fatalf("after a%d: %d ready, with ten_a over its share", i, len(f.ready))
		}
	}
	f.leave(a[3])
	if len(f.ready) != 1 || f.ready[0] != a[4] {
		t.Fatalf("at its share, a4 not handed its place: %v", f.ready)
	}
	f.ready = nil
	// ten_b's turn ends; within mixedHold ten_a keeps to its share.
	f.leave(b)
	now = now.Add(mixedHold / 2)
	if f.admit(a[6]) {
		t.Fatal("ten_a admitted past its share within mixedHold")
	}
	// Uncrowded, ten_a has its whole limit: a turn's end hands its place
	// and the room to its parked work.
	crowded = false
	f.leave(a[4])
	if len(f.ready) != 2 || f.ready[0] != a[5] || f.ready[1] != a[6] {
		t.Fatalf("uncrowded, ready %v, want a5 and a6", f.ready)
	}
	f.ready = nil
	// Crowded again but alone past mixedHold: the whole limit.
	crowded, now = true, now.Add(mixedHold)
	if !f.admit(a[7]) {
		t.Fatalf("ten_a alone past mixedHold: a7 not admitted (%d active)", f.active["ten_a"])
	}
}
