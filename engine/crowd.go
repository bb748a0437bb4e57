package engine

import (
	"context"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Crowding: whether this process's goroutines wait for a core. A tenant's
// broadcast at full pace keeps its TenantConcurrency turns runnable, and
// Go shares the cores among goroutines, not tenants: another tenant's one
// run then waits behind dozens of them at every hand-off (the API, NATS,
// the Bridge, SMTP), and its trigger takes a hundred milliseconds where it
// took five. While the process is crowded and more than one tenant has
// turns under way, fair admits at most share turns a tenant (fair.go).
// A broadcast whose Bridge is slow leaves the cores idle: never crowded,
// it keeps its whole limit whoever else has work.
//
// Crowded is read from the runtime's scheduling latencies (the time a
// goroutine waited, runnable, for a core), every crowdEvery: the process
// is crowded when at least crowdShare of the last interval's waits took
// crowdWait or longer, and stays so for crowdHold after: held to their
// shares, the tenants leave the cores idle enough to read uncrowded at
// once, and back at their limits crowd them again.
const (
	crowdEvery = 50 * time.Millisecond
	crowdWait  = time.Millisecond
	crowdShare = 0.05
	crowdHold  = time.Second
)

const schedLatencies = "/sched/latencies:seconds"

// crowd is the last reading of crowding.
type crowd struct{ on atomic.Bool }

// crowded reports the last reading.
func (c *crowd) crowded() bool { return c.on.Load() }

// watch reads crowding every crowdEvery until ctx ends.
func (c *crowd) watch(ctx context.Context) {
	s := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return // not measured by this runtime: never crowded
	}
	prev := append([]uint64(nil), s[0].Value.Float64Histogram().Counts...)
	t := time.NewTicker(crowdEvery)
	defer t.Stop()
	var held crowdHeld
	for {
		var now time.Time
		select {
		case now = <-t.C:
		case <-ctx.Done():
			return
		}
		metrics.Read(s)
		h := s[0].Value.Float64Histogram()
		c.on.Store(held.read(crowdedBy(prev, h.Counts, h.Buckets), now))
		prev = append(prev[:0], h.Counts...)
	}
}

// crowdHeld holds a crowded reading for crowdHold.
type crowdHeld struct{ last time.Time }

// read returns whether the process is crowded at now, given whether the
// reading at now is.
func (c *crowdHeld) read(crowded bool, now time.Time) bool {
	if crowded {
		c.last = now
	}
	return !c.last.IsZero() && now.Sub(c.last) < crowdHold
}

// crowdedBy reports whether at least crowdShare of the waits counted
// between two readings of the latency histogram (counts of bucket i, from
// buckets[i] to buckets[i+1] seconds) took crowdWait or longer. A bucket
// that straddles crowdWait counts as shorter.
func crowdedBy(prev, counts []uint64, buckets []float64) bool {
	var all, long uint64
	for i, n := range counts {
		if i < len(prev) {
			n -= prev[i]
		}
		all += n
		if buckets[i] >= crowdWait.Seconds() {
			long += n
		}
	}
	return all > 0 && float64(long) >= crowdShare*float64(all)
}
