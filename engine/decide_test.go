package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/runstate"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Minute)
	sub := "u1"
	base := func(status runstate.Status, wake *time.Time, steps ...runstate.Step) *runstate.State {
		return &runstate.State{RunID: "r", SubscriberID: &sub, Status: status, WakeAt: wake, Steps: steps}
	}
	sleeping := runstate.Step{StepID: "d", Type: "delay", Status: runstate.StepSleeping, Attempts: 1}
	waiting := runstate.Step{StepID: "w", Type: "waitForEvent", Status: runstate.StepWaiting, Attempts: 1}
	retrying := runstate.Step{StepID: "a", Type: "run", Status: runstate.StepRetrying, Attempts: 1}
	held := runstate.Step{StepID: "s", Type: "send", Status: runstate.StepSleeping, Attempts: 1, HeldUntil: &future}
	withSignals := func(s *runstate.State, sigs ...runstate.Signal) *runstate.State {
		s.WaitEvent, s.Signals = "approved", sigs
		return s
	}
	cases := []struct {
		name string
		st   *runstate.State
		want Action
	}{
		{"finished", base(runstate.Completed, nil), Action{Kind: ActNone}},
		{"digested", base(runstate.Digested, nil), Action{Kind: ActNone}},
		{"running", base(runstate.Running, nil), Action{Kind: ActExecute}},
		{"retry not due", base(runstate.Running, &future, retrying), Action{Kind: ActWait, At: future}},
		{"retry due", base(runstate.Running, &past, retrying), Action{Kind: ActExecute}},
		{"sleep not due", base(runstate.Sleeping, &future, sleeping), Action{Kind: ActWait, At: future}},
		{"sleep due", base(runstate.Sleeping, &now, sleeping), Action{Kind: ActResume, StepID: "d", StepType: "delay", Output: jsonNull}},
		{"held send not due", base(runstate.Sleeping, &future, held), Action{Kind: ActWait, At: future}},
		{"held send due: the Bridge is asked for it again", base(runstate.Sleeping, &now, held), Action{Kind: ActExecute}},
		{"wait, no signal, no timeout", withSignals(base(runstate.Waiting, nil, waiting)), Action{Kind: ActWait}},
		{"wait, no signal, timeout ahead", withSignals(base(runstate.Waiting, &future, waiting)), Action{Kind: ActWait, At: future}},
		{"wait timed out", withSignals(base(runstate.Waiting, &past, waiting)),
			Action{Kind: ActResume, StepID: "w", StepType: "waitForEvent", Output: jsonNull}},
		{"wait takes the oldest matching signal", withSignals(base(runstate.Waiting, &past, waiting),
			runstate.Signal{Seq: 3, Event: "rejected", Payload: json.RawMessage(`1`)},
			runstate.Signal{Seq: 4, Event: "approved", Payload: json.RawMessage(`2`)},
			runstate.Signal{Seq: 5, Event: "approved", Payload: json.RawMessage(`3`)}),
			Action{Kind: ActResume, StepID: "w", StepType: "waitForEvent", Output: json.RawMessage(`2`), SignalSeq: 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.st, now)
			if got.Kind != c.want.Kind || got.StepID != c.want.StepID || got.StepType != c.want.StepType ||
				string(got.Output) != string(c.want.Output) || got.SignalSeq != c.want.SignalSeq || !got.At.Equal(c.want.At) {
				t.Fatalf("Decide = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base   time.Duration
		n      int
		jitter float64
		want   time.Duration
	}{
		{time.Second, 1, 0, time.Second},
		{time.Second, 2, 0, 2 * time.Second},
		{time.Second, 3, 0, 4 * time.Second},
		{time.Second, 4, 0.5, 8*time.Second + time.Second},
		{time.Second, 20, 0, 5 * time.Minute},
		{time.Second, 20, 0.999, 5*time.Minute + time.Duration(float64(5*time.Minute)*0.25*0.999)},
		{100 * time.Millisecond, 1, 0.25, 100*time.Millisecond + 6250*time.Microsecond},
	}
	for _, c := range cases {
		if got := backoff(c.base, c.n, c.jitter); got != c.want {
			t.Errorf("backoff(%v, %d, %v) = %v, want %v", c.base, c.n, c.jitter, got, c.want)
		}
	}
}
