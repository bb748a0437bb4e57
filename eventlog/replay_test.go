package eventlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
)

// replayAll collects what Replay hands over.
func replayAll(t *testing.T, l *eventlog.Log, f eventlog.Filter) []eventlog.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []eventlog.Event
	if err := l.Replay(ctx, f, func(ev eventlog.Event) error { out = append(out, ev); return nil }); err != nil {
		t.Fatalf("replay %+v: %v", f, err)
	}
	return out
}

func TestReplayFilters(t *testing.T) {
	l := testnats.Log(t)
	ctx := context.Background()
	if got := replayAll(t, l, eventlog.Filter{}); len(got) != 0 {
		t.Fatalf("empty log: %d events", len(got))
	}
	base := time.Now().Add(-30 * time.Second).UTC()
	var recs []eventlog.Record
	for i := range 30 {
		tenant := []string{"ten_a", "ten_b", "ten_c"}[i%3]
		typ := []string{"SubscriberUpserted", "TopicUpserted"}[i%2]
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggTopic, "t"), Type: typ,
			Tenant: tenant, Data: map[string]int{"i": i}, At: base.Add(time.Duration(i) * time.Second)})
	}
	testnats.Append(t, l, recs)
	all := replayAll(t, l, eventlog.Filter{})
	if len(all) != 30 || all[0].Seq != 1 || all[29].Seq != 30 {
		t.Fatalf("all: %d events", len(all))
	}
	b := replayAll(t, l, eventlog.Filter{Tenant: "ten_b"})
	if len(b) != 10 {
		t.Fatalf("ten_b: %d events", len(b))
	}
	for _, ev := range b {
		if ev.TenantID != "ten_b" {
			t.Fatalf("ten_b replay holds %s", ev.TenantID)
		}
	}
	if got := replayAll(t, l, eventlog.Filter{Tenant: "ten_zzz"}); len(got) != 0 {
		t.Fatalf("unknown tenant: %d events", len(got))
	}
	typed := replayAll(t, l, eventlog.Filter{Tenant: "ten_a", Types: []string{"TopicUpserted"}})
	if len(typed) != 5 { // ten_a has i = 0,3,…,27; odd ones are TopicUpserted
		t.Fatalf("ten_a TopicUpserted: %d events", len(typed))
	}
	// Since filters on the envelope's time (the stream's storage time only
	// tells where to start reading).
	since := replayAll(t, l, eventlog.Filter{Since: base.Add(20 * time.Second)})
	if len(since) != 10 || since[0].Seq != 21 {
		t.Fatalf("since: %d events from #%d", len(since), since[0].Seq)
	}
	// A since after every stored event (stream time) returns at once.
	if got := replayAll(t, l, eventlog.Filter{Since: time.Now().Add(time.Hour)}); len(got) != 0 {
		t.Fatalf("future since: %d events", len(got))
	}
	if err := l.Replay(ctx, eventlog.Filter{Tenant: "a.>"}, nil); !errors.Is(err, eventlog.ErrBadFilter) {
		t.Fatalf("wildcard tenant: %v", err)
	}
}

func TestReplayFollow(t *testing.T) {
	l := testnats.Log(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subj := eventlog.Subject("ten_a", eventlog.AggTopic, "t")
	if _, err := l.Append(ctx, eventlog.Record{Subject: subj, Type: "A", Tenant: "ten_a"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan eventlog.Event, 10)
	done := make(chan error, 1)
	go func() {
		done <- l.Replay(ctx, eventlog.Filter{Follow: true, Types: []string{"B"}}, func(ev eventlog.Event) error {
			got <- ev
			return nil
		})
	}()
	if _, err := l.Append(ctx, eventlog.Record{Subject: subj, Type: "B", Tenant: "ten_a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if ev.Type != "B" || ev.Seq != 2 {
			t.Fatalf("followed %s #%d", ev.Type, ev.Seq)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow saw nothing")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("follow ended with %v", err)
	}
}

func TestMarshalLineAndAppendedHook(t *testing.T) {
	_, nc := testnats.Server(t)
	var n atomic.Int32
	l, err := eventlog.Open(context.Background(), nc, eventlog.Config{Appended: func(typ string) {
		if typ == "TopicUpserted" {
			n.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subj := eventlog.Subject("ten_a", eventlog.AggTopic, "t")
	rec := eventlog.Record{Subject: subj, Type: "TopicUpserted", Tenant: "ten_a", MsgID: "once", Data: map[string]string{"k": "v"}}
	for range 2 { // the repeat is de-duplicated and not counted
		if _, err := l.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	testnats.Append(t, l, []eventlog.Record{{Subject: subj, Type: "TopicUpserted", Tenant: "ten_a"}})
	if n.Load() != 2 {
		t.Fatalf("Appended counted %d events, want 2", n.Load())
	}
	ev, _, err := l.Last(ctx, subj)
	if err != nil {
		t.Fatal(err)
	}
	line, err := ev.MarshalLine()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"seq", "subject", "id", "type", "tenantId", "at", "data"} {
		if _, ok := m[k]; !ok {
			t.Errorf("line lacks %q: %s", k, line)
		}
	}
	if m["seq"] != float64(2) || m["subject"] != subj {
		t.Errorf("line = %s", line)
	}
}

func TestAttachNeedsExistingStreams(t *testing.T) {
	_, nc := testnats.Server(t)
	ctx := context.Background()
	if _, err := eventlog.Attach(ctx, nc, eventlog.Config{}); !errors.Is(err, eventlog.ErrNoStreams) {
		t.Fatalf("attach to nothing: %v", err)
	}
	if _, err := eventlog.Open(ctx, nc, eventlog.Config{}); err != nil {
		t.Fatal(err)
	}
	l, err := eventlog.Attach(ctx, nc, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := l.LastSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("LastSeq = %d, %v", seq, err)
	}
}
