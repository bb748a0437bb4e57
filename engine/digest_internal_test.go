package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
)

// A digest subject is folded once, then caught up with what was appended
// since: a step no longer re-reads the whole history. Payloads of windows
// closed over digestKeep before a newer window opened are dropped from
// the fold; a full read still has them.
func TestDigestFoldIsIncrementalAndPruned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := testnats.Log(t)
	e := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Log: l})
	subject := eventlog.Subject("ten_1", eventlog.AggDigest, "wf:u1:")
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	add := func(at time.Time, typ string, data any) {
		t.Helper()
		if _, err := l.Append(ctx, eventlog.Record{Subject: subject, Type: typ, Tenant: "ten_1", Data: data, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	add(t0, events.DigestOpened, events.DigestOpenedData{Window: "run_a", StepID: "g", ClosesAt: t0.Add(time.Minute)})
	add(t0.Add(time.Second), events.DigestJoined, events.DigestJoinedData{Window: "run_a", RunID: "run_b", Payload: json.RawMessage(`{"n":1}`)})
	d, err := e.readDigest(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	w := d.windows["run_a"]
	if d.joinedBy("run_b") != w || w.bytes != len(`{"n":1}`) {
		t.Fatalf("fold %+v", w)
	}
	marker := "folded once"
	w.opened.StepID = marker
	add(t0.Add(time.Minute), events.DigestClosed, events.DigestClosedData{Window: "run_a"})
	add(t0.Add(2*time.Hour), events.DigestOpened, events.DigestOpenedData{Window: "run_c", StepID: "g", ClosesAt: t0.Add(2*time.Hour + time.Minute)})
	d2, err := e.readDigest(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if d2 != d || d2.windows["run_a"].opened.StepID != marker {
		t.Fatal("the digest was folded again from the start")
	}
	if d2.open(t0.Add(2*time.Hour)) != d2.windows["run_c"] || d2.joinedBy("run_b") != d2.windows["run_a"] {
		t.Fatal("the caught-up fold lost a window")
	}
	if a := d2.windows["run_a"]; !a.pruned || a.joined[0].Payload != nil {
		t.Fatalf("window closed 2h before a newer one kept its payloads: %+v", a)
	}
	full, err := e.readDigestFull(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if a := full.windows["run_a"]; a.pruned || string(a.joined[0].Payload) != `{"n":1}` {
		t.Fatalf("full read %+v", a)
	}
}

// A window is full at MaxDigestEvents events or MaxDigestJoinedBytes of
// joined payloads.
func TestDigestWindowFull(t *testing.T) {
	t.Parallel()
	w := &window{}
	if w.full(MaxDigestJoinedBytes) || !w.full(MaxDigestJoinedBytes+1) {
		t.Fatal("bytes bound")
	}
	w.joined = make([]joinedRun, MaxDigestEvents-2)
	if w.full(1) {
		t.Fatal("full before MaxDigestEvents")
	}
	w.joined = append(w.joined, joinedRun{})
	if !w.full(1) {
		t.Fatal("not full at MaxDigestEvents")
	}
}
