package engine

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
)

// clock is a settable clock for engines of one test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// throttleEvents returns the runs counted on subject, in log order.
func throttleEvents(t *testing.T, l *eventlog.Log, subject string) []events.ThrottleCountedData {
	t.Helper()
	evs, err := l.History(context.Background(), subject, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.ThrottleCountedData
	for _, ev := range evs {
		var c events.ThrottleCountedData
		if err := ev.Decode(&c); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// Two engines on one log count on one subject: each sees the other's
// counts (a stale fold's append conflicts and reads what it missed), a
// step counted already answers its first count from either engine or a
// fresh one, and the subject holds one event per step.
func TestThrottleCountsOncePerStepAcrossEngines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := testnats.Log(t)
	c := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	newEngine := func() *Engine {
		return New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: c.now}, Deps{Log: l})
	}
	e1, e2 := newEngine(), newEngine()
	subject := eventlog.Subject("ten_1", eventlog.AggThrottle, events.ThrottleID("wf", "u1", "k"))
	count := func(e *Engine, run, step string) int {
		t.Helper()
		n, err := e.countThrottle(ctx, "ten_1", subject, run, step, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []struct {
		e    *Engine
		run  string
		step string
		want int
	}{
		{e1, "run_a", "t", 1},
		{e2, "run_b", "t", 2},
		{e1, "run_c", "t", 3}, // e1's fold lacks run_b
		{e2, "run_a", "t", 1}, // counted already
		{e1, "run_b", "t", 2},
		{e1, "run_a", "t2", 4}, // another throttle step of run_a
		{newEngine(), "run_c", "t", 3},
	}
	for i, s := range steps {
		c.add(time.Second)
		if got := count(s.e, s.run, s.step); got != s.want {
			t.Fatalf("step %d (%s %s): count %d, want %d", i, s.run, s.step, got, s.want)
		}
	}
	if got := throttleEvents(t, l, subject); len(got) != 4 {
		t.Fatalf("the subject holds %d counts, want 4: %+v", len(got), got)
	}
}

// Counts fall out of the window as it slides; a run counted before the
// fold was pruned still answers its own count; a longer
// window than the fold kept reads the log again and counts what it
// reaches.
func TestThrottleWindowSlidesAndPrunes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := testnats.Log(t)
	c := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	e := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: c.now}, Deps{Log: l})
	subject := eventlog.Subject("ten_1", eventlog.AggThrottle, events.ThrottleID("wf", "u1", ""))
	count := func(run string, window time.Duration) int {
		t.Helper()
		n, err := e.countThrottle(ctx, "ten_1", subject, run, "t", window)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("run_1", time.Minute); n != 1 {
		t.Fatalf("run_1: %d", n)
	}
	c.add(40 * time.Second)
	if n := count("run_2", time.Minute); n != 2 {
		t.Fatalf("run_2: %d", n)
	}
	c.add(30 * time.Second) // run_1 is 70 s old: out of the window
	if n := count("run_3", time.Minute); n != 2 {
		t.Fatalf("run_3: %d", n)
	}
	c.add(5 * time.Minute)
	if n := count("run_4", time.Minute); n != 1 {
		t.Fatalf("run_4: %d", n)
	}
	d, _ := e.throttles.get(subject)
	if d == nil || !d.pruned || len(d.entries) != 1 || len(d.byStep) != 4 {
		t.Fatalf("fold not pruned: %+v", d)
	}
	// run_1 comes back (a rerun): its first count, kept in the fold.
	if n := count("run_1", time.Minute); n != 1 {
		t.Fatalf("run_1 again: %d", n)
	}
	// A window of an hour reaches every run counted.
	if n := count("run_5", time.Hour); n != 5 {
		t.Fatalf("run_5 over an hour: %d", n)
	}
	if got := throttleEvents(t, l, subject); len(got) != 5 {
		t.Fatalf("the subject holds %d counts, want 5: %+v", len(got), got)
	}
}

// The cost of counting a run on a subject this engine counted on before
// (one conditional append), and when two engines alternate (each append
// after the other's conflicts once and reads the one event it missed).
func BenchmarkThrottleCount(b *testing.B) {
	ctx := context.Background()
	l := testnats.Log(b)
	newEngine := func() *Engine {
		return New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Log: l})
	}
	for _, bc := range []struct {
		name    string
		engines []*Engine
	}{{"one engine", []*Engine{newEngine()}}, {"two engines alternating", []*Engine{newEngine(), newEngine()}}} {
		b.Run(bc.name, func(b *testing.B) {
			subject := eventlog.Subject("ten_1", eventlog.AggThrottle, events.ThrottleID("wf", bc.name, ""))
			i := 0
			for b.Loop() {
				e := bc.engines[i%len(bc.engines)]
				if _, err := e.countThrottle(ctx, "ten_1", subject, eventlog.NewID("run_"), "t", time.Hour); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
