package engine

import (
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/runstate"
)

// ActionKind is what a worker must do next for a run.
type ActionKind int

// The kinds of Action.
const (
	// ActNone: the run is finished; nothing will ever happen again.
	ActNone ActionKind = iota
	// ActExecute: call the Bridge for the next step.
	ActExecute
	// ActResume: complete the pending delay or wait step with Output (and
	// SignalSeq, the signal a wait consumes), then go on.
	ActResume
	// ActWait: nothing is due; make sure a timer fires at At (zero At: the
	// run waits for a signal with no timeout).
	ActWait
)

// Action is the decision Decide takes.
type Action struct {
	Kind      ActionKind
	StepID    string
	StepType  string
	Output    json.RawMessage
	SignalSeq uint64
	At        time.Time
}

var jsonNull = json.RawMessage("null")

// Decide returns the next action of a run at instant now. It is pure: the
// same state and instant give the same action.
func Decide(s *runstate.State, now time.Time) Action {
	if s.Status.Finished() {
		return Action{Kind: ActNone}
	}
	pending := s.Pending()
	switch s.Status {
	case runstate.Sleeping:
		if !now.Before(*s.WakeAt) && pending.Type == "send" {
			// A send held by quiet hours: its time came, ask the
			// Bridge for it again and send it.
			return Action{Kind: ActExecute}
		}
		if !now.Before(*s.WakeAt) {
			return Action{Kind: ActResume, StepID: pending.StepID, StepType: pending.Type, Output: jsonNull}
		}
		return Action{Kind: ActWait, At: *s.WakeAt}
	case runstate.Waiting:
		if sig, ok := s.Signal(s.WaitEvent); ok {
			return Action{Kind: ActResume, StepID: pending.StepID, StepType: "waitForEvent",
				Output: sig.Payload, SignalSeq: sig.Seq}
		}
		if s.WakeAt != nil && !now.Before(*s.WakeAt) {
			return Action{Kind: ActResume, StepID: pending.StepID, StepType: "waitForEvent", Output: jsonNull}
		}
		if s.WakeAt != nil {
			return Action{Kind: ActWait, At: *s.WakeAt}
		}
		return Action{Kind: ActWait}
	}
	if s.WakeAt != nil && now.Before(*s.WakeAt) {
		return Action{Kind: ActWait, At: *s.WakeAt}
	}
	return Action{Kind: ActExecute}
}
