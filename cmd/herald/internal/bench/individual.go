package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// individual sends IndividualTriggers single-subscriber triggers from
// IndividualClients clients at once (each posts its next trigger as soon as
// its last one is answered, without waiting for the message), then waits
// for every message: one trigger per user event, the way most tenants use
// a notification service. Each message must arrive exactly once.
func (r *runner) individual(ctx context.Context, in *IndividualResult) error {
	n := in.Triggers
	prefix := fmt.Sprintf("ind-%s-%d-", r.sync, time.Now().UnixNano())
	c := newCollector(prefix, true, n)
	r.w.collector.Store(c)
	defer r.w.collector.Store(nil)
	audience := max(1, min(r.cfg.audienceSize(), 1000))
	starts := make([]time.Time, n)
	posts := make([]float64, n)
	var posted atomic.Int64
	began := time.Now()
	stop := ticker(time.Second, func() {
		got, _ := c.snapshot()
		el := time.Since(began).Seconds()
		r.progress("individual: %d/%d triggers answered, %d messages in the sink after %.0f s (%.0f/s)", posted.Load(), n, got, el, float64(got)/el)
	})
	defer stop()
	wf := r.sendWorkflow()
	err := parallel(ctx, in.Clients, n, func(ctx context.Context, _, i int) error {
		start := time.Now()
		starts[i] = start
		if err := r.trigger(ctx, wf, map[string]any{"subscriberId": subscriberID(i % audience)},
			map[string]any{"tag": prefix + strconv.Itoa(i)}, ""); err != nil {
			return fmt.Errorf("trigger %d: %w", i, err)
		}
		posts[i] = ms(time.Since(start))
		posted.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	in.PostsSeconds = time.Since(began).Seconds()
	select {
	case <-c.reached:
	case <-ctx.Done():
		got, _ := c.snapshot()
		return fmt.Errorf("%d of %d messages arrived: %w", got, n, ctx.Err())
	}
	// A duplicate would arrive after the last first copy: give it a
	// moment.
	time.Sleep(500 * time.Millisecond)
	c.mu.Lock()
	lat := make([]float64, 0, n)
	var last time.Time
	missing, dups := 0, 0
	for i := range n {
		tag := prefix + strconv.Itoa(i)
		at, ok := c.arrivals[tag]
		if !ok {
			missing++
			continue
		}
		dups += c.subjects[tag] - 1
		lat = append(lat, ms(at.Sub(starts[i])))
		if at.After(last) {
			last = at
		}
	}
	in.Messages = c.count
	c.mu.Unlock()
	in.Duplicates = dups
	if missing > 0 || dups > 0 || in.Messages != n {
		return fmt.Errorf("exactly-once broken: %d messages for %d triggers, %d missing, %d duplicates", in.Messages, n, missing, dups)
	}
	in.Spread = spreadOf(sortedCopy(lat))
	ps := sortedCopy(posts)
	in.PostP50Ms, in.PostP99Ms = percentile(ps, 50), percentile(ps, 99)
	in.LastMs = ms(last.Sub(began))
	in.RunsPerS = float64(n) / (in.LastMs / 1000)
	r.progress("individual: %d triggers from %d clients answered in %.2f s, last message at %.2f s: %.0f runs/s; trigger → message p50 %.1f ms, p99 %.1f ms",
		n, in.Clients, in.PostsSeconds, in.LastMs/1000, in.RunsPerS, in.P50Ms, in.P99Ms)
	return nil
}
