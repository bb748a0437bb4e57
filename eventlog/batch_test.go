package eventlog_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
)

func appendOne(t *testing.T, ctx context.Context, l *eventlog.Log, i int) {
	t.Helper()
	if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject("t", "x", "a"), Type: "E", Tenant: "t", Data: i}); err != nil {
		t.Error(err)
	}
}

// TestBatchesGatherABusyLog: events arriving one by one, close together,
// right after a batch, come back as one batch; an event after a quiet
// spell comes back at once, alone.
func TestBatchesGatherABusyLog(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tail := tailing(t, ctx, l)
	const linger = 400 * time.Millisecond // events must come < 100ms apart
	b := tail.Batches(linger, nil, nil)

	appendOne(t, ctx, l, 0)
	if evs, err := b.Next(ctx, 100); err != nil || len(evs) != 1 {
		t.Fatalf("first batch: %d events, %v", len(evs), err)
	}
	go func() {
		for i := 1; i <= 5; i++ {
			appendOne(t, ctx, l, i)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var got []eventlog.Event
	for len(got) < 5 {
		evs, err := b.Next(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, evs...)
		if len(got) < 5 {
			t.Logf("a batch of %d", len(evs))
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d events", len(got))
	}
	if got[0].Seq != 2 || got[4].Seq != 6 {
		t.Fatalf("events %d…%d, want 2…6", got[0].Seq, got[4].Seq)
	}

	// Quiet for longer than linger: the next event is not held.
	time.Sleep(linger + 100*time.Millisecond)
	appendOne(t, ctx, l, 6)
	began := time.Now()
	evs, err := b.Next(ctx, 100)
	if err != nil || len(evs) != 1 {
		t.Fatalf("after a quiet spell: %d events, %v", len(evs), err)
	}
	if el := time.Since(began); el > linger/2 {
		t.Errorf("an event after a quiet spell waited %v", el)
	}
}

// TestBatchesStopAtMax: a batch never holds more than max events.
func TestBatchesStopAtMax(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 10 {
		appendOne(t, ctx, l, i)
	}
	tail := tailing(t, ctx, l)
	b := tail.Batches(time.Second, nil, nil)
	for n := 0; n < 10; {
		evs, err := b.Next(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > 3 {
			t.Fatalf("a batch of %d, max 3", len(evs))
		}
		n += len(evs)
	}
}

// TestBatchesEndAtAnAwaitedEvent: a batch gathering a busy log ends at the
// event someone waits for, not at the end of the linger.
func TestBatchesEndAtAnAwaitedEvent(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tail := tailing(t, ctx, l)
	const awaited = 4
	b := tail.Batches(time.Second, func(seq uint64) bool { return seq == awaited }, nil)
	appendOne(t, ctx, l, 0)
	if _, err := b.Next(ctx, 100); err != nil {
		t.Fatal(err)
	}
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		for i := 1; i <= 5; i++ {
			appendOne(t, ctx, l, i)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { <-appended }()
	var got []uint64
	began := time.Now()
	for len(got) == 0 || got[len(got)-1] < awaited {
		evs, err := b.Next(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			got = append(got, ev.Seq)
		}
	}
	if got[len(got)-1] != awaited {
		t.Errorf("the batch went on past the awaited event: %v", got)
	}
	if el := time.Since(began); el > 500*time.Millisecond {
		t.Errorf("the awaited event came after %v: the batch lingered", el)
	}
}

// TestBatchesEndWhenAReaderStartsWaiting: a reader that starts waiting for
// an event the batch already holds ends the batch at once, though no
// other event comes.
func TestBatchesEndWhenAReaderStartsWaiting(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tail := tailing(t, ctx, l)
	var waiting atomic.Bool
	nudge := make(chan struct{}, 1)
	const linger = 2 * time.Second // a batch would otherwise wait 500ms for more
	b := tail.Batches(linger, func(seq uint64) bool { return waiting.Load() && seq >= 2 }, nudge)
	appendOne(t, ctx, l, 0)
	if _, err := b.Next(ctx, 100); err != nil {
		t.Fatal(err)
	}
	appendOne(t, ctx, l, 1)
	began := time.Now()
	go func() {
		time.Sleep(50 * time.Millisecond)
		waiting.Store(true)
		nudge <- struct{}{}
	}()
	evs, err := b.Next(ctx, 100)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("batch %v, %v", evs, err)
	}
	if el := time.Since(began); el > 300*time.Millisecond {
		t.Errorf("the batch ended %v after the reader started waiting", el-50*time.Millisecond)
	}
}

// tailing tails l from its start until the test ends.
func tailing(t *testing.T, ctx context.Context, l *eventlog.Log) *eventlog.Tail {
	t.Helper()
	tail, err := l.Tail(ctx, eventlog.TailOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tail.Stop)
	return tail
}
