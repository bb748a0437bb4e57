package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/nats-io/nats.go/jetstream"
)

// appendN appends n events to one aggregate of tenant t1.
func appendN(t *testing.T, l *eventlog.Log, from, n int) {
	t.Helper()
	var recs []eventlog.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject("t1", eventlog.AggSubscriber, fmt.Sprintf("s%d", i)),
			Type: "test.event", Tenant: "t1", Data: map[string]int{"i": i}})
	}
	testnats.Append(t, l, recs)
}

// readN reads n events from tail and checks they are the stream's
// sequences after, in order, each once; the deadline guards against a hang.
func readN(t *testing.T, tail *eventlog.Tail, after uint64, n int) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for got := 0; got < n; {
		evs, err := tail.Next(ctx, n-got)
		if err != nil {
			t.Fatalf("after %d of %d events: %v", got, n, err)
		}
		for _, ev := range evs {
			if ev.Seq != after+1 {
				t.Fatalf("event #%d follows #%d", ev.Seq, after)
			}
			after = ev.Seq
			got++
		}
	}
	return after
}

// theTailConsumer returns the name of the EVENTS stream's one tail
// consumer.
func theTailConsumer(t *testing.T, l *eventlog.Log) string {
	t.Helper()
	var names []string
	st, err := l.JetStream().Stream(context.Background(), eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	lister := st.ListConsumers(context.Background())
	for info := range lister.Info() {
		if strings.HasPrefix(info.Name, "tail_") {
			names = append(names, info.Name)
		}
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 {
		t.Fatalf("tail consumers: %v", names)
	}
	return names[0]
}

// restartCountedTail starts a tail of l with opts, counting its restarts;
// it is stopped when the test ends.
func restartCountedTail(t *testing.T, l *eventlog.Log, opts eventlog.TailOptions) (*eventlog.Tail, *atomic.Int32) {
	t.Helper()
	var restarts atomic.Int32
	opts.Restarted = func() { restarts.Add(1) }
	tail, err := l.Tail(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tail.Stop)
	return tail, &restarts
}

// TestTailFollowsAnewWhenItsConsumerIsDeleted: the server drops the tail's
// consumer (as when the node holding it is lost); the tail notices and
// goes on from the last event it read, none skipped, none twice.
func TestTailFollowsAnewWhenItsConsumerIsDeleted(t *testing.T) {
	followsAnewAfter(t, eventlog.TailOptions{}, 10, func(l *eventlog.Log, consumer string) error {
		return l.JetStream().DeleteConsumer(context.Background(), eventlog.EventsStream, consumer)
	})
}

// TestTailFollowsAnewWhenItsConsumerStopsDelivering: the tail's consumer
// stays alive and answers heartbeats but delivers nothing (paused on the
// server: what a pull lost with its node looks like to a client that did
// not notice); the watchdog sees events it has not read and follows anew.
func TestTailFollowsAnewWhenItsConsumerStopsDelivering(t *testing.T) {
	followsAnewAfter(t, eventlog.TailOptions{StallAfter: 300 * time.Millisecond}, 5, func(l *eventlog.Log, consumer string) error {
		_, err := l.JetStream().PauseConsumer(context.Background(), eventlog.EventsStream, consumer, time.Now().Add(time.Hour))
		return err
	})
}

// followsAnewAfter reads n events through a tail with opts, has lose do
// to the tail's consumer what losing it looks like, and checks that the
// tail reads the n events appended next, none skipped, none twice, and
// follows anew once.
func followsAnewAfter(t *testing.T, opts eventlog.TailOptions, n int, lose func(l *eventlog.Log, consumer string) error) {
	t.Helper()
	l := testnats.Log(t)
	tail, restarts := restartCountedTail(t, l, opts)
	appendN(t, l, 0, n)
	last := readN(t, tail, 0, n)
	if err := lose(l, theTailConsumer(t, l)); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, n, n)
	readN(t, tail, last, n)
	// Restarted is told once the new consumer runs, which may be after it
	// delivered what was just read.
	waitCount(t, "restarts", restarts, 1)
}

// TestIdleTailIsNotRestarted: a tail with nothing to read is left alone.
func TestIdleTailIsNotRestarted(t *testing.T) {
	l := testnats.Log(t)
	appendN(t, l, 0, 3)
	tail, restarts := restartCountedTail(t, l, eventlog.TailOptions{StallAfter: 100 * time.Millisecond})
	readN(t, tail, 0, 3)
	// Ten stall bounds with nothing to read.
	time.Sleep(time.Second)
	if n := restarts.Load(); n != 0 {
		t.Fatalf("an idle tail was started anew %d times", n)
	}
}

// consumeDurable consumes a durable on the WORK stream, acknowledging and
// counting every message.
func consumeDurable(t *testing.T, l *eventlog.Log, stall time.Duration, logs *testlog.Buffer) (*eventlog.Consumption, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	// What the consumption logged (its restarts, its retries) is the
	// story of a failure: kept with it.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the consumption's logs:\n%s", logs.String())
		}
	})
	var got, restarts atomic.Int32
	c, err := eventlog.Consume(context.Background(), l.JetStream(), eventlog.Durable{
		Stream: eventlog.WorkStream,
		// AckWait: a message the server handed to a pull that silently
		// ended (EndQuietly) comes back after it, to the consumption
		// started anew; the default's 30 s would be the test's time.
		Config: jetstream.ConsumerConfig{Durable: "test-work", FilterSubject: "work.test.>", AckPolicy: jetstream.AckExplicitPolicy,
			MaxAckPending: 100, AckWait: 2 * time.Second},
		Handler:    func(m jetstream.Msg) { got.Add(1); _ = m.Ack() },
		Options:    []jetstream.PullConsumeOpt{jetstream.PullHeartbeat(500 * time.Millisecond)},
		Logger:     slog.New(slog.NewTextHandler(logs, nil)),
		StallAfter: stall,
		Restarted:  func(string, string) { restarts.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c, &got, &restarts
}

func publishWork(t *testing.T, l *eventlog.Log, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.JetStream().Publish(context.Background(), fmt.Sprintf("work.test.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
}

func waitCount(t *testing.T, what string, c *atomic.Int32, n int32) {
	t.Helper()
	testwait.Until(t, what, func() error {
		if got := c.Load(); got < n {
			return fmt.Errorf("%d, want %d", got, n)
		}
		return nil
	})
}

// TestConsumptionStartsAnewWhenItsConsumerIsDeleted: a durable deleted
// under a consumption (a node's loss, an operator) is created again and
// consumed: nothing stalls.
func TestConsumptionStartsAnewWhenItsConsumerIsDeleted(t *testing.T) {
	l := testnats.Log(t)
	logs := &testlog.Buffer{}
	_, got, restarts := consumeDurable(t, l, time.Minute, logs)
	publishWork(t, l, 5)
	waitCount(t, "messages", got, 5)
	if err := l.JetStream().DeleteConsumer(context.Background(), eventlog.WorkStream, "test-work"); err != nil {
		t.Fatal(err)
	}
	waitCount(t, "restarts", restarts, 1)
	publishWork(t, l, 5)
	waitCount(t, "messages", got, 10)
	if !strings.Contains(logs.String(), "consuming it anew") {
		t.Fatalf("no log line for the restart: %q", logs.String())
	}
}

// TestConsumptionOutlastsARefusedRestart: a consumption whose consumer the
// server refuses to create again for a while keeps trying, logs the
// refusal as an error, and consumes again once the server takes it.
// Giving up at the refusal would leave its work undelivered for good. The
// refusal here: another consumer took the same subjects of the work queue
// stream while the consumption's pull was ended and its consumer deleted.
func TestConsumptionOutlastsARefusedRestart(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	logs := &testlog.Buffer{}
	c, got, restarts := consumeDurable(t, l, 300*time.Millisecond, logs)
	publishWork(t, l, 5)
	waitCount(t, "messages", got, 5)
	c.EndQuietly()
	js := l.JetStream()
	// On a loaded machine the watchdog may start the consumption anew
	// between the deletion and the squatter (the server then refuses the
	// squatter): delete it again until the squatter holds the subjects.
	for {
		if err := js.DeleteConsumer(ctx, eventlog.WorkStream, "test-work"); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatal(err)
		}
		_, err := js.CreateConsumer(ctx, eventlog.WorkStream, jetstream.ConsumerConfig{Durable: "squatter",
			FilterSubject: "work.test.>", AckPolicy: jetstream.AckExplicitPolicy})
		if err == nil {
			break
		}
		if apiErr, ok := errors.AsType[*jetstream.APIError](err); !ok || apiErr.Code != 400 {
			t.Fatal(err)
		}
	}
	before := restarts.Load()
	publishWork(t, l, 5)
	testwait.Until(t, "the refusal logged", func() error {
		if !strings.Contains(logs.String(), "consumer refused by the server") {
			return errors.New("not yet")
		}
		return nil
	})
	if n := restarts.Load() - before; n != 0 {
		t.Fatalf("%d restarts while the server refused the consumer", n)
	}
	if err := js.DeleteConsumer(ctx, eventlog.WorkStream, "squatter"); err != nil {
		t.Fatal(err)
	}
	waitCount(t, "restarts", restarts, before+1)
	waitCount(t, "messages", got, 10)
}

// TestConsumptionStartsAnewWhenItStalls: a consumption whose pulls ended
// without an error (as when the client library gives up on a lost node
// silently) while the server holds messages and room for them is consumed
// anew after StallAfter.
func TestConsumptionStartsAnewWhenItStalls(t *testing.T) {
	l := testnats.Log(t)
	logs := &testlog.Buffer{}
	c, got, restarts := consumeDurable(t, l, 300*time.Millisecond, logs)
	publishWork(t, l, 3)
	waitCount(t, "messages", got, 3)
	c.EndQuietly()
	publishWork(t, l, 3)
	waitCount(t, "messages", got, 6)
	if restarts.Load() == 0 {
		t.Fatal("the ended consumption delivered: the test shows nothing")
	}
}

// A process is alive while it renews its presence, gone at once when it
// stops cleanly, and gone TTL after its last renewal when it is killed.
func TestPresence(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	watcher, err := l.Presence(ctx, "proc_watcher", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clean, err := l.Presence(ctx, "proc_clean", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { clean.Run(runCtx); close(done) }()
	waitAlive := func(id string, want bool) {
		t.Helper()
		testwait.Until(t, fmt.Sprintf("%s alive %v", id, want), func() error {
			alive, err := watcher.Alive(ctx, id)
			if err == nil && alive != want {
				err = fmt.Errorf("alive %v", alive)
			}
			return err
		})
	}
	waitAlive("proc_clean", true)
	// Renewed past several TTLs.
	time.Sleep(2500 * time.Millisecond)
	if alive, err := watcher.Alive(ctx, "proc_clean"); err != nil || !alive {
		t.Fatalf("a renewing process: alive %v, %v", alive, err)
	}
	stop()
	<-done
	waitAlive("proc_clean", false)

	// Killed: one renewal, then nothing.
	killed, err := l.Presence(ctx, "proc_killed", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	once, cancel := context.WithCancel(ctx)
	cancel()
	killed.Renew(once)
	waitAlive("proc_killed", true)
	waitAlive("proc_killed", false)
	if alive, _ := watcher.Alive(ctx, "proc_watcher"); !alive {
		t.Fatal("a process is not alive to itself")
	}
}

// TestFilteredTailFollowsAnewWhenItsConsumerStopsDelivering: a tail of
// some subjects whose consumer delivers nothing more sees, among the other
// subjects' events appended since, one it follows, and follows anew from
// its last: it reads that event, once.
func TestFilteredTailFollowsAnewWhenItsConsumerStopsDelivering(t *testing.T) {
	l := testnats.Log(t)
	tail, restarts := restartCountedTail(t, l, eventlog.TailOptions{StallAfter: 300 * time.Millisecond,
		Filters: []string{"ev.*." + eventlog.AggInbox + ".*"}})
	inbox := func(i int) eventlog.Record {
		return eventlog.Record{Subject: eventlog.Subject("t1", eventlog.AggInbox, fmt.Sprintf("s%d", i)),
			Type: "test.inbox", Tenant: "t1", Data: map[string]int{"i": i}}
	}
	testnats.Append(t, l, []eventlog.Record{inbox(0)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if evs, err := tail.Next(ctx, 1); err != nil || len(evs) != 1 {
		t.Fatalf("the first inbox event: %v, %v", evs, err)
	}
	if _, err := l.JetStream().PauseConsumer(ctx, eventlog.EventsStream, theTailConsumer(t, l), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 0, 50)
	testnats.Append(t, l, []eventlog.Record{inbox(1)})
	appendN(t, l, 50, 50)
	evs, err := tail.Next(ctx, 10)
	if err != nil || len(evs) != 1 || evs[0].Type != "test.inbox" {
		t.Fatalf("after the pause: %v, %v", evs, err)
	}
	waitCount(t, "restarts", restarts, 1)
}

// TestFilteredTailAmongOtherEventsIsNotRestarted: a tail of some subjects
// that receives nothing while other subjects' events are appended is not
// stalled, and is left alone.
func TestFilteredTailAmongOtherEventsIsNotRestarted(t *testing.T) {
	l := testnats.Log(t)
	_, restarts := restartCountedTail(t, l, eventlog.TailOptions{StallAfter: 100 * time.Millisecond,
		Filters: []string{"ev.*." + eventlog.AggInbox + ".*"}})
	// Other events over ten stall bounds.
	for i := range 10 {
		appendN(t, l, i*20, 20)
		time.Sleep(100 * time.Millisecond)
	}
	if n := restarts.Load(); n != 0 {
		t.Fatalf("a filtered tail with nothing to read was started anew %d times", n)
	}
}
