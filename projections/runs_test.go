package projections_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// runHistory is the events of a few interleaved runs: started, a failed
// try, a completed step, completed; one event whose data does not decode.
func runHistory(t *testing.T) []eventlog.Event {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []eventlog.Event
	add := func(runID, typ string, data any) {
		raw, ok := data.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(data); err != nil {
				t.Fatal(err)
			}
		}
		evs = append(evs, eventlog.Event{ID: fmt.Sprintf("evt_%d", len(evs)), Type: typ, TenantID: "ten_1",
			At: at.Add(time.Duration(len(evs)) * time.Millisecond), Data: raw, Seq: uint64(len(evs) + 1),
			Subject: eventlog.Subject("ten_1", eventlog.AggRun, runID)})
	}
	for i := range 3 {
		sub := fmt.Sprintf("s%d", i)
		add(fmt.Sprintf("run_%d", i), events.RunStarted, events.RunStartedData{RunID: fmt.Sprintf("run_%d", i),
			TransactionID: "txn_1", WorkflowID: "wf", SubscriberID: &sub})
	}
	// A subscriber frozen alone (no step yet), and one with a first step;
	// a run that gets no further.
	s3 := "s3"
	add("run_3", events.RunStarted, events.RunStartedData{RunID: "run_3", TransactionID: "txn_2", WorkflowID: "wf", SubscriberID: &s3})
	add("run_3", events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`{"subscriberId":"s3"}`)})
	add("run_0", events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`{"subscriberId":"s0"}`)})
	add("run_1", events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`{"subscriberId":"s1"}`),
		Step: &events.StepCompletedData{StepID: "first", Type: "run", Output: json.RawMessage(`{"x": [1, 2]}`)}})
	for i := range 3 {
		add(fmt.Sprintf("run_%d", i), events.StepFailed, events.StepFailedData{StepID: "a", Type: "run", Attempt: 1,
			Code: "step_failed", Message: "boom", RetryAt: at.Add(time.Second)})
	}
	add("run_1", events.StepCompleted, json.RawMessage(`{"stepId": 7`)) // does not decode: skipped
	for i := range 3 {
		add(fmt.Sprintf("run_%d", i), events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run",
			Output: json.RawMessage(`{"n":1}`)})
	}
	add("run_0", events.RunCompleted, events.RunCompletedData{})
	add("run_2", events.RunFailed, events.RunFailedData{StepID: "b", Code: "no_address", Message: "none"})
	add("run_9", events.StepCompleted, events.StepCompletedData{StepID: "x", Type: "run"}) // no start: not shown
	return evs
}

// TestRunEventsBatchedOrOneByOne: a batch holding several events of each
// run leaves the same runs as the events applied one by one, and the same
// as one by one by a store opened afresh for each (every run read from
// its row, none from the projector's cache of the states it wrote).
func TestRunEventsBatchedOrOneByOne(t *testing.T) {
	evs := runHistory(t)
	dir := t.TempDir()
	quiet := projections.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	batched, err := projections.Open(filepath.Join(dir, "batched.db"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer batched.Close()
	single, err := projections.Open(filepath.Join(dir, "single.db"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	if err := batched.ApplyBatch(evs); err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := single.ApplyBatch([]eventlog.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	coldPath := filepath.Join(dir, "cold.db")
	for _, ev := range evs {
		cold, err := projections.Open(coldPath, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if err := cold.ApplyBatch([]eventlog.Event{ev}); err != nil {
			t.Fatal(err)
		}
		if err := cold.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cold, err := projections.Open(coldPath, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	a, err := batched.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	b, err := single.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cold.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	if a != b || b != c {
		t.Errorf("checksums differ: batched %s, one by one %s, one by one from the rows %s", a, b, c)
	}
	for _, id := range []string{"run_0", "run_1", "run_2"} {
		x, err := batched.RunState("ten_1", id)
		if err != nil {
			t.Fatal(err)
		}
		y, err := single.RunState("ten_1", id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(x, y) {
			t.Errorf("%s: batched %+v, one by one %+v", id, x, y)
		}
	}
	if st, _ := batched.RunState("ten_1", "run_0"); st.Status != "completed" || len(st.Steps) != 1 || st.Steps[0].Attempts != 2 {
		t.Errorf("run_0 %+v", st)
	}
	if _, err := batched.RunState("ten_1", "run_9"); err != projections.ErrNotFound {
		t.Errorf("a run with no start: %v", err)
	}
	runs, _, err := batched.Runs("ten_1", projections.RunFilter{TransactionID: "txn_1"}, projections.Page{Limit: 10})
	if err != nil || len(runs) != 3 {
		t.Errorf("runs of txn_1: %d, %v", len(runs), err)
	}
}
