package runstate_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

// history builds events from (type, payload) pairs, one second apart.
func history(t *testing.T, pairs ...any) []events.Event {
	t.Helper()
	var evs []events.Event
	for i := 0; i < len(pairs); i += 2 {
		data, err := json.Marshal(pairs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		n := len(evs)
		evs = append(evs, events.Event{ID: "e", Type: pairs[i].(string), TenantID: "ten_1",
			At: t0.Add(time.Duration(n) * time.Second), Data: data, Seq: uint64(n + 1)})
	}
	return evs
}

func sub(s string) *string { return &s }

func started() (string, events.RunStartedData) {
	return events.RunStarted, events.RunStartedData{RunID: "run_1", TransactionID: "txn_1", WorkflowID: "welcome", SubscriberID: sub("u1")}
}

func TestFoldTable(t *testing.T) {
	st, sd := started()
	at := t0.Add(time.Hour)
	cases := []struct {
		name    string
		evs     []any
		status  runstate.Status
		steps   string // stepId:status:attempts, comma separated
		wake    *time.Time
		signals int
		errCode string
	}{
		{"started", []any{st, sd}, runstate.Running, "", nil, 0, ""},
		{"one step", []any{st, sd, events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run", Output: json.RawMessage(`1`)}},
			runstate.Running, "a:completed:1", nil, 0, ""},
		{"failed twice then ok", []any{st, sd,
			events.StepFailed, events.StepFailedData{StepID: "a", Attempt: 1, Code: "step_failed", RetryAt: at},
			events.StepFailed, events.StepFailedData{StepID: "a", Attempt: 2, Code: "step_failed", RetryAt: at},
			events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run"}},
			runstate.Running, "a:completed:3", nil, 0, ""},
		{"retrying", []any{st, sd, events.StepFailed, events.StepFailedData{StepID: "a", Attempt: 1, Code: "x", RetryAt: at}},
			runstate.Running, "a:retrying:1", &at, 0, ""},
		{"unnamed failure then named step", []any{st, sd,
			events.StepFailed, events.StepFailedData{Attempt: 1, Code: "bridge_unreachable", RetryAt: at},
			events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run"}},
			runstate.Running, "a:completed:2", nil, 0, ""},
		{"sleeping", []any{st, sd, events.RunSleeping, events.RunSleepingData{StepID: "d", Until: at}},
			runstate.Sleeping, "d:sleeping:1", &at, 0, ""},
		{"slept", []any{st, sd, events.RunSleeping, events.RunSleepingData{StepID: "d", Until: at},
			events.StepCompleted, events.StepCompletedData{StepID: "d", Type: "delay"}},
			runstate.Running, "d:completed:1", nil, 0, ""},
		{"waiting with early signal", []any{st, sd,
			events.SignalReceived, events.SignalReceivedData{Event: "approved", Payload: json.RawMessage(`{"ok":true}`)},
			events.RunWaiting, events.RunWaitingData{StepID: "w", Event: "approved", TimeoutAt: &at}},
			runstate.Waiting, "w:waiting:1", &at, 1, ""},
		{"signal consumed", []any{st, sd,
			events.SignalReceived, events.SignalReceivedData{Event: "approved"},
			events.SignalReceived, events.SignalReceivedData{Event: "approved"},
			events.RunWaiting, events.RunWaitingData{StepID: "w", Event: "approved"},
			events.StepCompleted, events.StepCompletedData{StepID: "w", Type: "waitForEvent", SignalSeq: 2}},
			runstate.Running, "w:completed:1", nil, 1, ""},
		{"terminal failure", []any{st, sd, events.RunFailed, events.RunFailedData{StepID: "s", Code: "no_channel", Message: "m"}},
			runstate.Failed, "s:failed:1", nil, 0, "no_channel"},
		{"completed ignores late events", []any{st, sd, events.RunCompleted, struct{}{},
			events.StepCompleted, events.StepCompletedData{StepID: "x", Type: "run"},
			events.SignalReceived, events.SignalReceivedData{Event: "e"}},
			runstate.Completed, "", nil, 0, ""},
		{"cancelled while sleeping", []any{st, sd, events.RunSleeping, events.RunSleepingData{StepID: "d", Until: at},
			events.RunCancelled, struct{}{}},
			runstate.Cancelled, "d:cancelled:1", nil, 0, "cancelled"},
		{"cancelled while waiting", []any{st, sd, events.RunWaiting, events.RunWaitingData{StepID: "w", Event: "approved", TimeoutAt: &at},
			events.RunCancelled, events.RunCancelledData{Reason: events.CancelTransaction}},
			runstate.Cancelled, "w:cancelled:1", nil, 0, "cancelled"},
		{"cancelled while retrying", []any{st, sd, events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run"},
			events.StepFailed, events.StepFailedData{StepID: "b", Attempt: 1, Code: "step_failed", RetryAt: at},
			events.RunCancelled, struct{}{}},
			runstate.Cancelled, "a:completed:1,b:cancelled:1", nil, 0, "cancelled"},
		{"attempts exhausted on the named step", []any{st, sd,
			events.StepFailed, events.StepFailedData{StepID: "a", Attempt: 1, Code: "step_failed", RetryAt: at},
			events.StepFailed, events.StepFailedData{StepID: "a", Attempt: 2, Code: "step_failed", RetryAt: at},
			events.RunFailed, events.RunFailedData{StepID: "a", Code: "attempts_exhausted", Message: "step a failed 3 times"}},
			runstate.Failed, "a:failed:3", nil, 0, "attempts_exhausted"},
		{"attempts exhausted before any step", []any{st, sd,
			events.StepFailed, events.StepFailedData{Attempt: 1, Code: "bridge_unreachable", RetryAt: at},
			events.StepFailed, events.StepFailedData{Attempt: 2, Code: "bridge_unreachable", RetryAt: at},
			events.RunFailed, events.RunFailedData{Code: "attempts_exhausted", Message: "step  failed 3 times"}},
			runstate.Failed, "bridge:failed:3", nil, 0, "attempts_exhausted"},
		{"attempts exhausted on the call to the bridge", []any{st, sd,
			events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run"},
			events.StepFailed, events.StepFailedData{StepID: "bridge", Type: "bridge", Attempt: 1, Code: "bridge_error", RetryAt: at},
			events.RunFailed, events.RunFailedData{StepID: "bridge", Type: "bridge", Code: "attempts_exhausted", Message: "step bridge failed 2 times"}},
			runstate.Failed, "a:completed:1,bridge:failed:2", nil, 0, "attempts_exhausted"},
		{"the bridge fails the workflow at once", []any{st, sd,
			events.RunFailed, events.RunFailedData{Code: "workflow_not_found", Message: "bridge answered 404: not found"}},
			runstate.Failed, "bridge:failed:1", nil, 0, "workflow_not_found"},
		{"the call to the bridge answered by the run's end", []any{st, sd,
			events.StepFailed, events.StepFailedData{StepID: "bridge", Type: "bridge", Attempt: 1, Code: "bridge_error", RetryAt: at},
			events.RunCompleted, struct{}{}},
			runstate.Completed, "bridge:completed:1", nil, 0, ""},
		{"a step the bridge went on past", []any{st, sd,
			events.StepFailed, events.StepFailedData{StepID: "a", Attempt: 1, Code: "step_failed", RetryAt: at},
			events.RunCompleted, struct{}{}},
			runstate.Completed, "a:failed:1", nil, 0, ""},
		{"a delay the dead letter failed", []any{st, sd, events.RunSleeping, events.RunSleepingData{StepID: "d", Until: at},
			events.RunFailed, events.RunFailedData{StepID: "d", Type: "delay", Code: "infrastructure_exhausted", Message: "m"}},
			runstate.Failed, "d:failed:2", nil, 0, "infrastructure_exhausted"},
		{"rerun after attempts exhausted", []any{st, sd,
			events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run"},
			events.StepFailed, events.StepFailedData{StepID: "b", Attempt: 1, Code: "step_failed", RetryAt: at},
			events.RunFailed, events.RunFailedData{StepID: "b", Code: "attempts_exhausted", Message: "m"},
			events.RunRerun, events.RunRerunData{StepID: "b", Code: "attempts_exhausted", Message: "m", Actor: "hk_12345678"}},
			runstate.Running, "a:completed:1,b:retrying:0", nil, 0, ""},
		{"rerun then the step completes", []any{st, sd,
			events.RunFailed, events.RunFailedData{StepID: "b", Code: "step_failed", Message: "m"},
			events.RunRerun, events.RunRerunData{StepID: "b", Code: "step_failed", Message: "m"},
			events.StepFailed, events.StepFailedData{StepID: "b", Attempt: 1, Code: "step_failed", RetryAt: at},
			events.StepCompleted, events.StepCompletedData{StepID: "b", Type: "run"},
			events.RunCompleted, struct{}{}},
			runstate.Completed, "b:completed:2", nil, 0, ""},
		{"rerun of a run not failed changes nothing", []any{st, sd, events.RunCompleted, struct{}{},
			events.RunRerun, events.RunRerunData{}},
			runstate.Completed, "", nil, 0, ""},
		{"rerun of a cancelled run changes nothing", []any{st, sd, events.RunCancelled, events.RunCancelledData{Reason: events.CancelTransaction},
			events.RunRerun, events.RunRerunData{}},
			runstate.Cancelled, "", nil, 0, "cancelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := runstate.Fold(history(t, c.evs...))
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, st := range s.Steps {
				steps = append(steps, st.StepID+":"+st.Status+":"+strconv.Itoa(st.Attempts))
			}
			if s.Status != c.status || strings.Join(steps, ",") != c.steps {
				t.Fatalf("status %s steps %v", s.Status, steps)
			}
			checkInvariants(t, s)
			if (s.WakeAt == nil) != (c.wake == nil) || (c.wake != nil && !s.WakeAt.Equal(*c.wake)) {
				t.Fatalf("wake %v, want %v", s.WakeAt, c.wake)
			}
			if len(s.Signals) != c.signals {
				t.Fatalf("signals %d, want %d", len(s.Signals), c.signals)
			}
			if code := ""; s.Error != nil {
				code = s.Error.Code
				if code != c.errCode {
					t.Fatalf("error %q, want %q", code, c.errCode)
				}
			} else if c.errCode != "" {
				t.Fatalf("no error, want %q", c.errCode)
			}
		})
	}
}

// checkInvariants fails t when s contradicts itself: a step without its
// id or type, or a finished run with a step still under way.
func checkInvariants(t *testing.T, s *runstate.State) {
	t.Helper()
	for i, st := range s.Steps {
		if st.StepID == "" || st.Type == "" {
			t.Errorf("step %d has stepId %q type %q", i, st.StepID, st.Type)
		}
		if s.Status.Finished() && (st.Status == runstate.StepRetrying || st.Status == runstate.StepSleeping || st.Status == runstate.StepWaiting) {
			t.Errorf("the %s run's step %s is %s", s.Status, st.StepID, st.Status)
		}
	}
	if s.Status.Finished() && s.Pending() != nil {
		t.Errorf("the %s run has a step pending: %+v", s.Status, s.Pending())
	}
}

// The types of the steps a failure names: the one it records, else the
// one the step had, else a run step's; the call to the Bridge is a step
// "bridge" of type "bridge", which the step the Bridge names next
// replaces.
func TestFailedStepTypes(t *testing.T) {
	st, sd := started()
	at := t0.Add(time.Hour)
	cases := []struct {
		name  string
		evs   []any
		types string // stepId:type, comma separated
	}{
		{"a send that found no channel", []any{st, sd,
			events.RunFailed, events.RunFailedData{StepID: "mail", Type: "send", Code: "no_channel", Message: "m"}}, "mail:send"},
		{"a send failed before the field existed", []any{st, sd,
			events.RunFailed, events.RunFailedData{StepID: "mail", Code: "no_channel", Message: "m"}}, "mail:run"},
		{"a send held then failed", []any{st, sd,
			events.RunSleeping, events.RunSleepingData{StepID: "mail", Type: "send", Until: at},
			events.RunFailed, events.RunFailedData{StepID: "mail", Code: "no_channel", Message: "m"}}, "mail:send"},
		{"a step the bridge failed in", []any{st, sd,
			events.StepFailed, events.StepFailedData{StepID: "fetch", Attempt: 1, Code: "step_failed", RetryAt: at}}, "fetch:run"},
		{"the bridge then a named step", []any{st, sd,
			events.StepFailed, events.StepFailedData{StepID: "bridge", Type: "bridge", Attempt: 1, Code: "bridge_error", RetryAt: at},
			events.StepFailed, events.StepFailedData{StepID: "fetch", Attempt: 2, Code: "step_failed", RetryAt: at}}, "fetch:run"},
		{"the bridge then a delay", []any{st, sd,
			events.StepFailed, events.StepFailedData{Attempt: 1, Code: "bridge_error", RetryAt: at},
			events.RunSleeping, events.RunSleepingData{StepID: "d", Until: at}}, "d:delay"},
		{"the bridge down before any step", []any{st, sd,
			events.StepFailed, events.StepFailedData{Attempt: 1, Code: "bridge_unreachable", RetryAt: at}}, "bridge:bridge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := runstate.Fold(history(t, c.evs...))
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			var got []string
			for _, st := range s.Steps {
				got = append(got, st.StepID+":"+st.Type)
			}
			if g := strings.Join(got, ","); g != c.types {
				t.Fatalf("steps %s, want %s", g, c.types)
			}
		})
	}
}

func TestOtherRunRefused(t *testing.T) {
	st, sd := started()
	s, _ := runstate.Fold(history(t, st, sd))
	other := history(t, events.RunStarted, events.RunStartedData{RunID: "run_2"})[0]
	if err := s.Apply(other); err == nil {
		t.Fatal("applied another run's start")
	}
}

// TestGoldenHistories folds each testdata/*.events.json (an array of
// events) and compares the state with the matching .state.json.
func TestGoldenHistories(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.events.json")
	if len(files) == 0 {
		t.Fatal("no golden histories")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var evs []struct {
				events.Event
				Seq uint64 `json:"seq"`
			}
			if err := json.Unmarshal(data, &evs); err != nil {
				t.Fatal(err)
			}
			var list []events.Event
			for _, e := range evs {
				e.Event.Seq = e.Seq
				list = append(list, e.Event)
			}
			s, err := runstate.Fold(list)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s)
			got, _ := json.MarshalIndent(s, "", "  ")
			golden := strings.TrimSuffix(f, ".events.json") + ".state.json"
			if *update {
				os.WriteFile(golden, append(got, '\n'), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
				t.Fatalf("state differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestSubscriberFrozenOnce(t *testing.T) {
	st, sd := started()
	evs := history(t, st, sd,
		events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`{"subscriberId":"u1","locale":"fr"}`)},
		events.StepCompleted, events.StepCompletedData{StepID: "a", Type: "run", Output: json.RawMessage(`1`)},
		events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`{"subscriberId":"u1","locale":"de"}`)})
	s, err := runstate.Fold(evs)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Subscriber); got != `{"subscriberId":"u1","locale":"fr"}` {
		t.Fatalf("subscriber = %s, want the first recorded", got)
	}
	if s.LastSeq != 4 || !s.Answered() {
		t.Fatalf("lastSeq %d answered %v", s.LastSeq, s.Answered())
	}
	out, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "locale") {
		t.Fatalf("the frozen subscriber leaks into the state's JSON: %s", out)
	}
	if fresh, _ := runstate.Fold(evs[:1]); fresh.Subscriber != nil || fresh.Answered() {
		t.Fatal("a just started run has no subscriber on record and no answer")
	}
}

// A first step recorded with the frozen subscriber folds as the subscriber
// then the step recorded apart.
func TestSubscriberRecordedWithFirstStep(t *testing.T) {
	subscriber := json.RawMessage(`{"subscriberId":"u1","locale":"fr"}`)
	step := events.StepCompletedData{StepID: "load", Type: "run", Output: json.RawMessage(`{"plan":"pro"}`)}
	st, sd := started()
	together, err := runstate.Fold(history(t, st, sd,
		events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: subscriber, Step: &step}))
	if err != nil {
		t.Fatal(err)
	}
	apart, err := runstate.Fold(history(t, st, sd,
		events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: subscriber},
		events.StepCompleted, step))
	if err != nil {
		t.Fatal(err)
	}
	if string(together.Subscriber) != string(subscriber) {
		t.Fatalf("subscriber = %s", together.Subscriber)
	}
	// The last sequence and time differ (one event less); the rest is
	// the same.
	together.LastSeq, together.UpdatedAt = apart.LastSeq, apart.UpdatedAt
	if g, w := mustJSON(t, together), mustJSON(t, apart); g != w {
		t.Fatalf("folded together:\n%s\napart:\n%s", g, w)
	}
	if done := together.CompletedSteps(); len(done) != 1 || done[0].StepID != "load" || string(done[0].Output) != `{"plan":"pro"}` {
		t.Fatalf("completed steps %+v", done)
	}
}

// A last step recorded with the run's end folds as the step then the end
// recorded apart; an end without a step (the form of every RunCompleted
// written before the field) still ends the run alone, with data {} or
// none at all.
func TestLastStepRecordedWithCompletion(t *testing.T) {
	load := events.StepCompletedData{StepID: "load", Type: "run", Output: json.RawMessage(`{"plan":"pro"}`)}
	sent := events.StepCompletedData{StepID: "email", Type: "send",
		Output: json.RawMessage(`{"attemptId":"att_1","status":"sent","providerMessageId":"m@x"}`)}
	st, sd := started()
	together, err := runstate.Fold(history(t, st, sd,
		events.StepCompleted, load,
		events.RunCompleted, events.RunCompletedData{Step: &sent}))
	if err != nil {
		t.Fatal(err)
	}
	apart, err := runstate.Fold(history(t, st, sd,
		events.StepCompleted, load,
		events.StepCompleted, sent,
		events.RunCompleted, events.RunCompletedData{}))
	if err != nil {
		t.Fatal(err)
	}
	if together.Status != runstate.Completed {
		t.Fatalf("status %s", together.Status)
	}
	together.LastSeq, together.UpdatedAt = apart.LastSeq, apart.UpdatedAt
	if g, w := mustJSON(t, together), mustJSON(t, apart); g != w {
		t.Fatalf("folded together:\n%s\napart:\n%s", g, w)
	}
	if done := together.CompletedSteps(); len(done) != 2 || done[1].StepID != "email" || string(done[1].Output) != string(sent.Output) {
		t.Fatalf("completed steps %+v", done)
	}
	// The old forms: data {} (RunCompletedData without fields) and no data.
	for _, data := range []string{`{}`, ``} {
		evs := history(t, st, sd, events.StepCompleted, load, events.StepCompleted, sent)
		evs = append(evs, events.Event{Type: events.RunCompleted, TenantID: evs[0].TenantID,
			At: evs[len(evs)-1].At.Add(time.Second), Seq: evs[len(evs)-1].Seq + 1, Data: json.RawMessage(data)})
		old, err := runstate.Fold(evs)
		if err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		if g, w := mustJSON(t, old), mustJSON(t, apart); g != w {
			t.Fatalf("data %q: folded\n%s\nwant\n%s", data, g, w)
		}
	}
	// A step carried by the end of a finished run changes nothing.
	again, err := runstate.Fold(history(t, st, sd,
		events.RunCompleted, events.RunCompletedData{},
		events.RunCompleted, events.RunCompletedData{Step: &sent}))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.CompletedSteps()) != 0 {
		t.Fatalf("a finished run took steps: %+v", again.Steps)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A send held by quiet hours sleeps; the instant it was held until stays
// on the step through a failed try, and the step completes as a send.
func TestHeldSend(t *testing.T) {
	until := t0.Add(time.Hour)
	typ, d := started()
	st, err := runstate.Fold(history(t, typ, d,
		events.RunSleeping, events.RunSleepingData{StepID: "mail", Until: until, Type: "send", Reason: events.SleepQuietHours},
	))
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := st.HeldSend("mail"); st.Status != runstate.Sleeping || !ok || !at.Equal(until) || st.Pending().Type != "send" {
		t.Fatalf("held: %+v", st)
	}
	if _, ok := st.HeldSend("other"); ok {
		t.Fatal("another step reads as held")
	}
	evs := history(t, typ, d,
		events.RunSleeping, events.RunSleepingData{StepID: "mail", Until: until, Type: "send", Reason: events.SleepQuietHours},
		events.StepFailed, events.StepFailedData{StepID: "mail", Type: "send", Attempt: 2, Code: "provider_error", RetryAt: until.Add(time.Second)},
	)
	if st, err = runstate.Fold(evs); err != nil {
		t.Fatal(err)
	}
	if at, ok := st.HeldSend("mail"); !ok || !at.Equal(until) || st.Status != runstate.Running {
		t.Fatalf("after a failed try: %+v", st)
	}
	evs = append(evs, history(t, typ, d, typ, d, typ, d,
		events.StepCompleted, events.StepCompletedData{StepID: "mail", Type: "send", Output: json.RawMessage(`{"status":"sent"}`)})[3])
	if st, err = runstate.Fold(evs); err != nil {
		t.Fatal(err)
	}
	if s := st.Steps[0]; len(st.Steps) != 1 || s.Status != runstate.StepDone || s.HeldUntil == nil || st.Pending() != nil {
		t.Fatalf("completed: %+v", st)
	}
}

// The controls recorded at a run's first turn are the run's: a later
// record does not change them; a run without a subscriber records them
// with a null subscriber, which records no subscriber.
func TestControlsRecordedOnce(t *testing.T) {
	st, sd := started()
	s, err := runstate.Fold(history(t, st, sd,
		events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`null`),
			Controls: json.RawMessage(`{"mail":{"subject":"Bonjour"}}`), Locale: "fr-CA"},
		events.RunSubscriberRecorded, events.RunSubscriberRecordedData{Subscriber: json.RawMessage(`{"subscriberId":"u1"}`),
			Controls: json.RawMessage(`{"mail":{"subject":"Changed"}}`), Locale: "en"}))
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Controls) != `{"mail":{"subject":"Bonjour"}}` || s.Locale != "fr-CA" {
		t.Fatalf("controls %s locale %q, want the first recorded", s.Controls, s.Locale)
	}
	if string(s.Subscriber) != `{"subscriberId":"u1"}` {
		t.Fatalf("subscriber = %s: a null one is no subscriber", s.Subscriber)
	}
	if out := mustJSON(t, s); strings.Contains(out, "Bonjour") {
		t.Fatalf("the controls leak into the state's JSON: %s", out)
	}
}
