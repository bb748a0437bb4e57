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
	// An end carrying the last step; an end with no data at all.
	add("run_1", events.RunCompleted, events.RunCompletedData{Step: &events.StepCompletedData{StepID: "email", Type: "send",
		Output: json.RawMessage(`{"attemptId":"att_1","status":"sent"}`)}})
	add("run_3", events.RunCompleted, json.RawMessage(nil))
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
	if st, _ := batched.RunState("ten_1", "run_1"); st.Status != "completed" || len(st.Steps) != 3 ||
		st.Steps[2].StepID != "email" || st.Steps[2].Status != "completed" || string(st.Steps[2].Output) != `{"attemptId":"att_1","status":"sent"}` {
		t.Errorf("run_1 %+v", st)
	}
	if st, _ := batched.RunState("ten_1", "run_3"); st.Status != "completed" || len(st.Steps) != 0 {
		t.Errorf("run_3 %+v", st)
	}
	if _, err := batched.RunState("ten_1", "run_9"); err != projections.ErrNotFound {
		t.Errorf("a run with no start: %v", err)
	}
	runs, _, err := batched.Runs("ten_1", projections.RunFilter{TransactionID: "txn_1"}, projections.Page{Limit: 10})
	if err != nil || len(runs) != 3 {
		t.Errorf("runs of txn_1: %d, %v", len(runs), err)
	}
}

// TestSingleTriggerLedgerFromItsEvents: the ingress row of a trigger to
// one subscriber is received from its TriggerAccepted and dispatched from
// its run's RunStarted; with the TriggerAccepted erased, RunStarted alone
// writes it dispatched; a topic trigger's rows are left to its fan-out's
// events; a trigger written with the fan-out's events (NotificationsReceived,
// NotificationsDispatched, FanoutCompleted) ends the same.
func TestSingleTriggerLedgerFromItsEvents(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []eventlog.Event
	add := func(agg, id, typ string, data any) {
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, eventlog.Event{ID: fmt.Sprintf("evt_%d", len(evs)), Type: typ, TenantID: "ten_1",
			At: at.Add(time.Duration(len(evs)) * time.Millisecond), Data: raw, Seq: uint64(len(evs) + 1),
			Subject: eventlog.Subject("ten_1", agg, id)})
	}
	accept := func(txn string, to events.Target) {
		add(eventlog.AggTransaction, txn, events.TriggerAccepted, events.TriggerAcceptedData{TransactionID: txn,
			WorkflowID: "wf", To: to, Payload: json.RawMessage(`{}`)})
	}
	start := func(txn, sub string) {
		runID := "run_" + txn + "_" + sub
		add(eventlog.AggRun, runID, events.RunStarted, events.RunStartedData{RunID: runID, TransactionID: txn,
			WorkflowID: "wf", SubscriberID: &sub})
	}
	u1, u2, u4 := "u1", "u2", "u4"
	accept("single", events.Target{SubscriberID: &u1})
	accept("pending", events.Target{SubscriberID: &u2}) // its run not started (yet)
	start("single", "u1")
	start("erased", "u3") // its TriggerAccepted secure-deleted
	accept("topic", events.Target{Topics: []string{"news"}})
	add(eventlog.AggTransaction, "topic", events.NotificationsReceived, events.NotificationsReceivedData{WorkflowID: "wf", SubscriberIDs: []string{"u1"}})
	start("topic", "u1")
	// A trigger to one subscriber fanned out.
	accept("fanned", events.Target{SubscriberID: &u4})
	add(eventlog.AggTransaction, "fanned", events.NotificationsReceived, events.NotificationsReceivedData{WorkflowID: "wf", SubscriberIDs: []string{"u4"}})
	start("fanned", "u4")
	add(eventlog.AggTransaction, "fanned", events.NotificationsDispatched, events.NotificationsDispatchedData{Runs: []events.Dispatch{
		{SubscriberID: "u4", RunID: "run_fanned_u4", Status: events.NotificationDispatched}}})
	add(eventlog.AggTransaction, "fanned", events.FanoutCompleted, events.FanoutCompletedData{Count: 1})

	s, err := projections.Open(filepath.Join(t.TempDir(), "p.db"), projections.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ApplyBatch(evs); err != nil {
		t.Fatal(err)
	}
	for txn, want := range map[string]string{
		"single": "u1 dispatched run_single_u1", "pending": "u2 received ", "erased": "u3 dispatched run_erased_u3",
		"topic": "u1 received ", "fanned": "u4 dispatched run_fanned_u4",
	} {
		rows, _, err := s.Notifications("ten_1", txn, projections.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || fmt.Sprintf("%s %s %s", rows[0].SubscriberID, rows[0].Status, rows[0].RunID) != want ||
			rows[0].WorkflowID != "wf" || rows[0].CreatedAt.IsZero() {
			t.Errorf("%s: rows %+v, want %s", txn, rows, want)
		}
	}
}

// TestRunsNewestFirst: a tenant's runs list newest first, page after
// page, and narrow to a workflow; a file built by other read models is
// rebuilt, not served.
func TestRunsNewestFirst(t *testing.T) {
	evs := runHistory(t)
	quiet := projections.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	st, err := projections.Open(filepath.Join(t.TempDir(), "runs.db"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.ApplyBatch(evs); err != nil {
		t.Fatal(err)
	}
	var got []string
	p := projections.Page{Limit: 3}
	for {
		runs, next, err := st.Runs("ten_1", projections.RunFilter{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			got = append(got, r.RunID)
		}
		if next == "" {
			break
		}
		p.Cursor = next
	}
	if want := []string{"run_3", "run_2", "run_1", "run_0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("runs %v, want newest first %v", got, want)
	}
	for wf, n := range map[string]int{"wf": 4, "other": 0} {
		runs, _, err := st.Runs("ten_1", projections.RunFilter{WorkflowID: wf}, projections.Page{Limit: 10})
		if err != nil || len(runs) != n {
			t.Errorf("runs of workflow %s: %d, %v; want %d", wf, len(runs), err, n)
		}
	}
}
