package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/nats-io/nats.go/jetstream"
)

func TestTokenRoundTrip(t *testing.T) {
	ids := []string{"u1", "a.b.c", "*", ">", "with space", "ünïcødé 🚀", "a/b", "user@example.com", "", "..", "\t"}
	for _, id := range ids {
		tok := eventlog.Token(id)
		for _, c := range tok {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				t.Fatalf("Token(%q) = %q has %q", id, tok, c)
			}
		}
		back, err := eventlog.DecodeToken(tok)
		if err != nil || back != id {
			t.Fatalf("DecodeToken(Token(%q)) = %q, %v", id, back, err)
		}
	}
	if _, err := eventlog.DecodeToken("not base64!"); !errors.Is(err, eventlog.ErrBadToken) {
		t.Fatalf("bad token: %v", err)
	}
}

func TestSubjectsWithHostileIDsStayApart(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	ids := []string{"a.b", "a", "*", ">", "x y", "ünï", "a.*.>"}
	for _, id := range ids {
		subj := eventlog.Subject("ten_1", eventlog.AggSubscriber, id)
		if _, err := l.Append(ctx, eventlog.Record{Subject: subj, Type: "T", Tenant: "ten_1", Data: map[string]string{"id": id}}); err != nil {
			t.Fatalf("append %q: %v", id, err)
		}
	}
	for _, id := range ids {
		subj := eventlog.Subject("ten_1", eventlog.AggSubscriber, id)
		evs, err := l.History(ctx, subj, 0)
		if err != nil || len(evs) != 1 {
			t.Fatalf("history %q: %d events, %v", id, len(evs), err)
		}
		var d map[string]string
		if err := evs[0].Decode(&d); err != nil || d["id"] != id {
			t.Fatalf("history %q got %v", id, d)
		}
		tenant, agg, back, err := eventlog.ParseSubject(evs[0].Subject)
		if err != nil || tenant != "ten_1" || agg != eventlog.AggSubscriber || back != id {
			t.Fatalf("ParseSubject(%q) = %q %q %q %v", evs[0].Subject, tenant, agg, back, err)
		}
	}
}

func TestConcurrentAppendsExactlyOneWins(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	subj := eventlog.Subject("ten_1", eventlog.AggTopic, "news")
	seq, err := l.Append(ctx, eventlog.Record{Subject: subj, Type: "TopicUpserted", Tenant: "ten_1", Expect: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Append(ctx, eventlog.Record{Subject: subj, Type: "TopicUpserted", Tenant: "ten_1",
				Data: i, Expect: true, ExpectSeq: seq})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, eventlog.ErrConflict):
				conflicts++
			default:
				t.Errorf("unexpected: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != n-1 {
		t.Fatalf("wins=%d conflicts=%d", wins, conflicts)
	}
	evs, _ := l.History(ctx, subj, 0)
	if len(evs) != 2 {
		t.Fatalf("stored %d events, want 2", len(evs))
	}
}

func TestExpectEmptySubject(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	rec := eventlog.Record{Subject: eventlog.Subject("t", "x", "1"), Type: "Created", Tenant: "t", Expect: true}
	if _, err := l.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, rec); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
}

func TestDuplicateMsgIDStoredOnce(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	subj := eventlog.Subject("ten_1", eventlog.AggRun, "r1")
	rec := eventlog.Record{Subject: subj, Type: "StepCompleted", Tenant: "ten_1", MsgID: "r1:step:a"}
	s1, err := l.Append(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := l.Append(ctx, rec)
	if err != nil || s2 != s1 {
		t.Fatalf("repeat: seq %d vs %d, %v", s2, s1, err)
	}
	// A retry of a conditional append whose ack was lost: same id, same
	// expected sequence, answers the stored sequence, not a conflict.
	cond := eventlog.Record{Subject: subj, Type: "StepCompleted", Tenant: "ten_1", MsgID: "r1:step:b", Expect: true, ExpectSeq: s1}
	c1, err := l.Append(ctx, cond)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := l.Append(ctx, cond)
	if err != nil || c2 != c1 {
		t.Fatalf("conditional repeat: %d vs %d, %v", c2, c1, err)
	}
	evs, _ := l.History(ctx, subj, 0)
	if len(evs) != 2 {
		t.Fatalf("stored %d, want 2", len(evs))
	}
	if evs[0].ID != "r1:step:a" || evs[1].ID != "r1:step:b" {
		t.Fatalf("event ids %q %q", evs[0].ID, evs[1].ID)
	}
	// Only the plain record is remembered by the stream's duplicate
	// window; the conditional one is recognised by its expectation and id.
	stream, err := l.JetStream().Stream(ctx, eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{s1: "r1:step:a", c1: ""} {
		raw, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if got := raw.Header.Get(jetstream.MsgIDHeader); got != want {
			t.Errorf("seq %d: Nats-Msg-Id %q, want %q", seq, got, want)
		}
	}
}

func TestAppendEachAndHistoryAfter(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	var recs []eventlog.Record
	for i := range 300 {
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject("t", "x", fmt.Sprint(i%3)), Type: "E", Tenant: "t", Data: i})
	}
	seqs := testnats.Append(t, l, recs)
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("batch sequences not in order at %d: %d after %d", i, seqs[i], seqs[i-1])
		}
	}
	evs, err := l.History(ctx, eventlog.Subject("t", "x", "1"), seqs[150])
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		var i int
		_ = ev.Decode(&i)
		if i%3 != 1 || ev.Seq <= seqs[150] {
			t.Fatalf("history returned %d at #%d", i, ev.Seq)
		}
	}
	if len(evs) != 50 {
		t.Fatalf("history after: %d events, want 50", len(evs))
	}
	last, err := l.LastSeq(ctx)
	if err != nil || last != seqs[len(seqs)-1] {
		t.Fatalf("LastSeq %d, %v", last, err)
	}
}

func TestTailFromSequence(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 10 {
		if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject("t", "x", "a"), Type: "E", Tenant: "t", Data: i}); err != nil {
			t.Fatal(err)
		}
	}
	tail, err := l.Tail(ctx, eventlog.TailOptions{After: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer tail.Stop()
	var got []uint64
	for len(got) < 6 {
		evs, err := tail.Next(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			got = append(got, ev.Seq)
		}
	}
	if got[0] != 5 || got[5] != 10 {
		t.Fatalf("tail delivered %v", got)
	}
	// A later append arrives too.
	if _, err := l.Append(ctx, eventlog.Record{Subject: eventlog.Subject("t", "x", "b"), Type: "E", Tenant: "t"}); err != nil {
		t.Fatal(err)
	}
	evs, err := tail.Next(ctx, 100)
	if err != nil || len(evs) != 1 || evs[0].Seq != 11 {
		t.Fatalf("live tail: %v %v", evs, err)
	}
}

func TestScheduleFiresReplacesAndCancels(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	js := l.JetStream()
	cons, err := js.CreateOrUpdateConsumer(ctx, eventlog.WorkStream, jetstream.ConsumerConfig{
		Durable: "test", FilterSubject: "work.run.>", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	target := eventlog.WorkRun("t", "r1")
	sched := eventlog.SchedSubject("t", "run", "r1")
	start := time.Now()
	// The first schedule is replaced by the second; a third on another
	// subject is cancelled.
	if err := l.Schedule(ctx, sched, target, start.Add(time.Hour), []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := l.Schedule(ctx, sched, target, start.Add(700*time.Millisecond), []byte("new")); err != nil {
		t.Fatal(err)
	}
	other := eventlog.SchedSubject("t", "run", "r2")
	if err := l.Schedule(ctx, other, eventlog.WorkRun("t", "r2"), start.Add(500*time.Millisecond), []byte("cancelled")); err != nil {
		t.Fatal(err)
	}
	if err := l.Cancel(ctx, other); err != nil {
		t.Fatal(err)
	}
	msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range msgs.Messages() {
		got = append(got, string(m.Data()))
		if m.Subject() != target {
			t.Fatalf("fired on %s", m.Subject())
		}
		_ = m.Ack()
	}
	if len(got) != 1 || got[0] != "new" {
		t.Fatalf("fired %v", got)
	}
	if el := time.Since(start); el < 700*time.Millisecond {
		t.Fatalf("fired early after %v", el)
	}
	// Nothing else fires: the cancelled timer and the replaced one are gone.
	msgs, err = cons.Fetch(1, jetstream.FetchMaxWait(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs.Messages() {
		t.Fatalf("unexpected fire %q on %s", m.Data(), m.Subject())
	}
}

// TestOpenLeavesAStreamAsConfiguredAlone: a process that opens the log
// beside running ones does not update streams whose configuration herald
// already applied, and does update a stream changed behind its back.
func TestOpenLeavesAStreamAsConfiguredAlone(t *testing.T) {
	_, nc := testnats.Server(t)
	ctx := context.Background()
	if _, err := eventlog.Open(ctx, nc, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	describe := func(desc string, keepDigest bool) {
		t.Helper()
		st, err := js.Stream(ctx, eventlog.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		cfg.Description = desc
		if !keepDigest {
			cfg.Metadata = nil
		}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	description := func() string {
		t.Helper()
		st, err := js.Stream(ctx, eventlog.EventsStream)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config.Description
	}

	describe("touched by hand", true)
	if _, err := eventlog.Open(ctx, nc, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	if got := description(); got != "touched by hand" {
		t.Fatalf("a second Open updated a stream herald had configured: description %q", got)
	}

	describe("changed elsewhere", false)
	if _, err := eventlog.Open(ctx, nc, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	if got := description(); got == "changed elsewhere" {
		t.Fatal("Open left a stream whose configuration herald did not apply")
	}

	if _, err := eventlog.Open(ctx, nc, eventlog.Config{DuplicateWindow: time.Minute}); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Duplicates; got != time.Minute {
		t.Fatalf("a changed configuration was not applied: duplicates %v", got)
	}
}
