package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// subscriberID is the id of the i-th subscriber of the audience.
func subscriberID(i int) string { return fmt.Sprintf("s%07d", i) }

// topicKey is the topic holding subscribers 0 … n-1.
func topicKey(n int) string { return fmt.Sprintf("aud-%d", n) }

// ticker calls fn every interval until stop is called.
func ticker(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fn()
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// parallel runs n workers of fn over the indexes 0 … count-1 and returns
// the first error (which stops the others).
func parallel(ctx context.Context, workers, count int, fn func(ctx context.Context, worker, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, w, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// seed sets up the audience through the API: n subscribers with an email
// address, subscriber i subscribed to every topic of a size above i.
func (r *runner) seed(ctx context.Context, n int, a *AudienceResult) error {
	sizes := r.cfg.topicSizes()
	var reqs, subs atomic.Int64
	began := time.Now()
	stop := ticker(2*time.Second, func() {
		el := time.Since(began).Seconds()
		r.progress("audience: %d/%d subscribers, %.0f requests/s", subs.Load(), n, float64(reqs.Load())/el)
	})
	err := parallel(ctx, r.cfg.SeedClients, n, func(ctx context.Context, _, i int) error {
		id := subscriberID(i)
		if err := r.t.call(ctx, "PUT", "/v1/subscribers/"+id,
			map[string]any{"contacts": map[string]any{"email": []string{id + "@bench.herald.test"}}},
			nil, http.StatusOK, http.StatusCreated); err != nil {
			return err
		}
		reqs.Add(1)
		for _, size := range sizes {
			if i >= size {
				continue
			}
			if err := r.t.call(ctx, "PUT", "/v1/subscribers/"+id+"/subscriptions/"+topicKey(size), nil, nil,
				http.StatusOK, http.StatusCreated); err != nil {
				return err
			}
			reqs.Add(1)
		}
		subs.Add(1)
		return nil
	})
	stop()
	if err != nil {
		return err
	}
	a.Subscribers = n
	a.Subscriptions = 0
	for _, size := range sizes {
		a.Subscriptions += min(size, n)
	}
	a.Requests = int(reqs.Load())
	a.Seconds = time.Since(began).Seconds()
	a.RequestsPerS = float64(a.Requests) / a.Seconds
	return nil
}

// trigger is POST /v1/events.
func (r *runner) trigger(ctx context.Context, workflow string, to map[string]any, payload map[string]any, txn string) error {
	body := map[string]any{"workflowId": workflow, "to": to, "payload": payload}
	if txn != "" {
		body["transactionId"] = txn
	}
	return r.t.call(ctx, "POST", "/v1/events", body, nil, http.StatusAccepted)
}

// fanout triggers the topic of f.Subscribers subscribers once and waits
// for every message.
func (r *runner) fanout(ctx context.Context, f *FanoutResult) error {
	n := f.Subscribers
	tag := fmt.Sprintf("fanout-%s-%d-%d", r.sync, n, time.Now().UnixNano())
	c := newCollector(tag, false, n)
	r.w.collector.Store(c)
	defer r.w.collector.Store(nil)
	start := time.Now()
	posted := make(chan error, 1)
	go func() {
		err := r.trigger(ctx, r.sendWorkflow(), map[string]any{"topics": []string{topicKey(n)}}, map[string]any{"tag": tag}, tag)
		f.PostMs = ms(time.Since(start))
		posted <- err
	}()
	stop := ticker(time.Second, func() {
		got, _ := c.snapshot()
		el := time.Since(start).Seconds()
		r.progress("fanout %d: %d/%d messages in the sink after %.0f s (%.0f/s)", n, got, n, el, float64(got)/el)
	})
	defer stop()
	var postErr error
	postDone := false
	for done := false; !done; {
		select {
		case postErr = <-posted:
			postDone = true
			if postErr != nil {
				return fmt.Errorf("trigger: %w", postErr)
			}
			posted = nil
		case <-c.reached:
			done = true
		case <-ctx.Done():
			got, _ := c.snapshot()
			return fmt.Errorf("%d of %d messages arrived: %w", got, n, ctx.Err())
		}
	}
	if !postDone {
		if postErr = <-posted; postErr != nil {
			return fmt.Errorf("trigger: %w", postErr)
		}
	}
	// A duplicate would arrive after the last first copy: give it a
	// moment.
	time.Sleep(500 * time.Millisecond)
	count, _ := c.snapshot()
	dups, distinct := c.check()
	c.mu.Lock()
	first, last := c.first, c.last
	f.Deciles = decilesOf(n, start, c.tenths)
	c.mu.Unlock()
	f.Messages, f.Duplicates = count, dups
	f.FirstMs, f.LastMs = ms(first.Sub(start)), ms(last.Sub(start))
	// runs/s up to the n-th message (a late duplicate does not count).
	f.RunsPerS = float64(n) / (f.LastMs / 1000)
	r.progress("fanout %d: POST answered in %.2f s, last message at %.2f s: %.0f runs/s", n, f.PostMs/1000, f.LastMs/1000, f.RunsPerS)
	if distinct != n || dups != 0 {
		return fmt.Errorf("exactly-once broken: %d messages to %d distinct recipients for %d subscribers", count, distinct, n)
	}
	return nil
}

// latency sends LatencyTriggers single-subscriber triggers one after the
// other and times each until its message is in the sink.
func (r *runner) latency(ctx context.Context, l *LatencyResult) error {
	prefix := fmt.Sprintf("lat-%s-%d-", r.sync, time.Now().UnixNano())
	c := newCollector(prefix, true, -1)
	r.w.collector.Store(c)
	defer r.w.collector.Store(nil)
	audience := max(1, min(r.cfg.audienceSize(), 1000))
	lat := make([]float64, 0, l.Triggers)
	posts := make([]float64, 0, l.Triggers)
	for i := range l.Triggers {
		tag := fmt.Sprintf("%s%d", prefix, i)
		arrived := c.expect(tag)
		start := time.Now()
		if err := r.trigger(ctx, r.sendWorkflow(), map[string]any{"subscriberId": subscriberID(i % audience)}, map[string]any{"tag": tag}, ""); err != nil {
			return fmt.Errorf("trigger %d: %w", i, err)
		}
		posts = append(posts, ms(time.Since(start)))
		select {
		case at := <-arrived:
			lat = append(lat, ms(at.Sub(start)))
		case <-time.After(30 * time.Second):
			return fmt.Errorf("trigger %d: no message after 30 s", i)
		case <-ctx.Done():
			return ctx.Err()
		}
		if (i+1)%max(1, l.Triggers/5) == 0 {
			s := sortedCopy(lat)
			r.progress("latency: %d/%d, p50 %.1f ms, p99 %.1f ms", i+1, l.Triggers, percentile(s, 50), percentile(s, 99))
		}
	}
	time.Sleep(200 * time.Millisecond)
	count, _ := c.snapshot()
	if count != l.Triggers {
		return fmt.Errorf("exactly-once broken: %d messages for %d triggers", count, l.Triggers)
	}
	l.Spread = spreadOf(sortedCopy(lat))
	l.PostP50Ms = percentile(sortedCopy(posts), 50)
	return nil
}

// timers puts TimerRuns runs to sleep with one topic trigger and measures
// how late each resumes.
func (r *runner) timers(ctx context.Context, t *TimersResult) error {
	n := t.Runs
	tl := newTimerLog(n)
	r.w.timers.Store(tl)
	defer r.w.timers.Store(nil)
	start := time.Now()
	txn := fmt.Sprintf("timers-%s-%d", r.sync, start.UnixNano())
	posted := make(chan error, 1)
	go func() {
		err := r.trigger(ctx, wfDelay, map[string]any{"topics": []string{topicKey(n)}},
			map[string]any{"delayMs": r.cfg.TimerDelay.Milliseconds(), "spreadMs": r.cfg.TimerSpread.Milliseconds()}, txn)
		t.PostMs = ms(time.Since(start))
		posted <- err
	}()
	var peak atomic.Int64
	sample := func() (int, int) {
		sl, re := tl.counts()
		peak.Store(max(peak.Load(), int64(sl-re)))
		return sl, re
	}
	stopSample := ticker(20*time.Millisecond, func() { sample() })
	stop := ticker(time.Second, func() {
		sl, re := sample()
		r.progress("timers: %d/%d runs went to sleep, %d resumed", sl, n, re)
	})
	defer stop()
	defer stopSample()
	select {
	case <-tl.done:
	case <-ctx.Done():
		_, re := tl.counts()
		return fmt.Errorf("%d of %d runs resumed: %w", re, n, ctx.Err())
	}
	if err := <-posted; err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	t.Seconds = time.Since(start).Seconds()
	t.SleepingPeak = int(peak.Load())
	tl.mu.Lock()
	late := make([]float64, 0, n)
	var first, last time.Time
	for _, until := range tl.until {
		if first.IsZero() || until.Before(first) {
			first = until
		}
		if until.After(last) {
			last = until
		}
	}
	t.DueOverMs = ms(last.Sub(first))
	for id, at := range tl.resumes {
		until, ok := tl.until[id]
		if !ok {
			tl.mu.Unlock()
			return fmt.Errorf("run %s resumed without having slept", id)
		}
		d := ms(at.Sub(until))
		if d < 0 {
			t.Early++
		}
		late = append(late, d)
	}
	tl.mu.Unlock()
	s := sortedCopy(late)
	t.LateP50Ms, t.LateP95Ms, t.LateP99Ms, t.LateMaxMs = percentile(s, 50), percentile(s, 95), percentile(s, 99), s[len(s)-1]
	r.progress("timers: %d runs resumed, at most %d asleep at once, due over %.0f ms; lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		n, t.SleepingPeak, t.DueOverMs, t.LateP50Ms, t.LateP99Ms, t.LateMaxMs)
	if t.Early > 0 {
		return fmt.Errorf("%d runs resumed before their delay ended", t.Early)
	}
	return nil
}

// subscriberAnswer is the part of a subscriber body the api scenario
// checks.
type subscriberAnswer struct {
	SubscriberID string `json:"subscriberId"`
	Attributes   struct {
		N int `json:"n"`
	} `json:"attributes"`
}

// api measures subscriber upserts, GETs and PUT-then-GET pairs with
// concurrent clients, each checking that every answer shows its own last
// write.
func (r *runner) api(ctx context.Context, a *APIResult) error {
	clients := r.cfg.APIClients
	perClient := r.cfg.APIOps / clients
	idsPerClient := max(1, perClient/2) // the first half creates, the second updates
	id := func(c, k int) string { return fmt.Sprintf("api-%02d-%05d", c, k) }
	last := make([][]int, clients) // last value each client wrote per id
	for c := range last {
		last[c] = make([]int, idsPerClient)
	}
	var violations atomic.Int64
	put := func(ctx context.Context, c, k, v int) error {
		var ans subscriberAnswer
		if err := r.t.call(ctx, "PUT", "/v1/subscribers/"+id(c, k), map[string]any{
			"contacts":   map[string]any{"email": []string{id(c, k) + "@bench.herald.test"}},
			"attributes": map[string]any{"n": v, "plan": "pro", "tags": []string{"a", "b"}},
		}, &ans, http.StatusOK, http.StatusCreated); err != nil {
			return err
		}
		if ans.Attributes.N != v {
			violations.Add(1)
		}
		last[c][k] = v
		return nil
	}
	get := func(ctx context.Context, c, k int) error {
		var ans subscriberAnswer
		if err := r.t.call(ctx, "GET", "/v1/subscribers/"+id(c, k), nil, &ans, http.StatusOK); err != nil {
			return err
		}
		if ans.Attributes.N != last[c][k] {
			violations.Add(1)
		}
		return nil
	}
	phase := func(name string, fn func(ctx context.Context, c, j int) error) (perS, p99 float64, err error) {
		lat := make([][]float64, clients)
		began := time.Now()
		var done atomic.Int64
		stop := ticker(2*time.Second, func() {
			r.progress("api %s: %d/%d, %.0f/s", name, done.Load(), perClient*clients, float64(done.Load())/time.Since(began).Seconds())
		})
		err = parallel(ctx, clients, clients, func(ctx context.Context, _, c int) error {
			for j := range perClient {
				t0 := time.Now()
				if err := fn(ctx, c, j); err != nil {
					return err
				}
				lat[c] = append(lat[c], ms(time.Since(t0)))
				done.Add(1)
			}
			return nil
		})
		stop()
		el := time.Since(began).Seconds()
		var all []float64
		for _, l := range lat {
			all = append(all, l...)
		}
		s := sortedCopy(all)
		perS, p99 = float64(len(all))/el, percentile(s, 99)
		r.progress("api %s: %.0f/s, p50 %.1f ms, p99 %.1f ms", name, perS, percentile(s, 50), p99)
		return perS, p99, err
	}
	var err error
	// Upserts: creates, then updates of the same ids.
	if a.UpsertsPerS, a.UpsertP99Ms, err = phase("upserts", func(ctx context.Context, c, j int) error {
		return put(ctx, c, j%idsPerClient, j+1)
	}); err != nil {
		return err
	}
	a.TotalPuts = perClient * clients
	if a.GetsPerS, a.GetP99Ms, err = phase("GETs", func(ctx context.Context, c, j int) error {
		return get(ctx, c, j%idsPerClient)
	}); err != nil {
		return err
	}
	a.TotalGets = perClient * clients
	base := perClient + 1
	if a.PairsPerS, _, err = phase("PUT-then-GET", func(ctx context.Context, c, j int) error {
		k := j % idsPerClient
		if err := put(ctx, c, k, base+j); err != nil {
			return err
		}
		return get(ctx, c, k)
	}); err != nil {
		return err
	}
	a.TotalPuts += perClient * clients
	a.TotalGets += perClient * clients
	a.Violations = int(violations.Load())
	if a.Violations > 0 {
		return fmt.Errorf("%d answers did not show the client's own last write", a.Violations)
	}
	return nil
}
