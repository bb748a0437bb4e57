package runstate

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/events"
)

// Status of a run.
type Status string

// Run statuses.
const (
	Running   Status = "running"
	Sleeping  Status = "sleeping"
	Waiting   Status = "waiting"
	Completed Status = "completed"
	Failed    Status = "failed"
	Cancelled Status = "cancelled"
	Digested  Status = "digested"
)

// Finished reports whether no step of the run will ever execute again.
func (s Status) Finished() bool {
	return s == Completed || s == Failed || s == Cancelled || s == Digested
}

// Step statuses. A finished run has no step retrying, sleeping or
// waiting: its end settles the step under way (see settle).
const (
	StepDone      = "completed"
	StepFailed    = "failed"
	StepCancelled = "cancelled"
	StepRetrying  = "retrying"
	StepSleeping  = "sleeping"
	StepWaiting   = "waiting"
)

// BridgeStep is the stepId and the type of the step a run shows for the
// call to its Bridge while no step of the workflow is named: the Bridge
// is down, or failed the whole workflow before naming a step. No step of
// a workflow has the type "bridge"; the next step the Bridge names takes
// its place (and its attempts).
const BridgeStep = "bridge"

// stepTypeUnnamed is the type of a step whose failure the Bridge reported
// without its type: a step the Bridge ran, the callback of a run step.
const stepTypeUnnamed = "run"

// ErrOtherRun is returned by Apply for an event of another run.
var ErrOtherRun = errors.New("runstate: event of another run")

// Error is a run's or a step's failure: a stable code and a sentence.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Step is one step of a run as far as it got. Its StepID and Type are
// never empty.
type Step struct {
	StepID   string          `json:"stepId"`
	Type     string          `json:"type"`
	Status   string          `json:"status"`
	Attempts int             `json:"attempts"`
	Output   json.RawMessage `json:"output,omitempty"`
	Error    *Error          `json:"error,omitempty"`
	// HeldUntil is when a send held by quiet hours was released: set when
	// it was held, kept through its tries.
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
}

// Signal is a buffered external event not yet consumed by a wait.
type Signal struct {
	Seq     uint64          `json:"seq"`
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

// State is a run folded from its events.
type State struct {
	RunID         string  `json:"runId"`
	TenantID      string  `json:"tenantId"`
	TransactionID string  `json:"transactionId"`
	WorkflowID    string  `json:"workflowId"`
	SubscriberID  *string `json:"subscriberId"`
	Status        Status  `json:"status"`
	// Steps are the completed steps in order, then the current step when
	// it is in progress (retrying, sleeping or waiting), or, once the run
	// ended, how it ended (failed, cancelled).
	Steps []Step `json:"steps"`
	// WakeAt is when the run's pending timer is due: the end of a delay,
	// a wait's timeout or a retry. Nil: no timer.
	WakeAt *time.Time `json:"wakeAt,omitempty"`
	// WaitEvent is the signal name a waiting run waits for.
	WaitEvent string `json:"waitEvent,omitempty"`
	// Digest is the digest window a sleeping digest step waits out.
	Digest string `json:"digest,omitempty"`
	// Signals are the unconsumed signals, oldest first.
	Signals   []Signal  `json:"signals,omitempty"`
	Error     *Error    `json:"error,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LastSeq is the stream sequence of the last event applied.
	LastSeq uint64 `json:"lastSeq"`
	// Subscriber is the run's subscriber frozen at its first turn (the
	// Bridge protocol's JSON, from RunSubscriberRecorded); nil when none
	// was recorded: a cron run, a run not yet past its first turn, a run
	// started before subscribers were frozen, or one whose subscriber was
	// erased. It is personal data and never leaves the engine: no JSON.
	Subscriber json.RawMessage `json:"-"`
	// Controls are the values of the workflow's step controls resolved at
	// the run's first turn (a JSON object, step id → values), and Locale
	// the locale they were resolved for; Controls is nil when none were
	// recorded (a workflow without controls, a run started before they
	// were, or one whose record went with its erased subscriber).
	Controls json.RawMessage `json:"-"`
	Locale   string          `json:"-"`
}

// Fold applies evs, oldest first, to a new state.
func Fold(evs []events.Event) (*State, error) {
	s := &State{}
	for _, ev := range evs {
		if err := s.Apply(ev); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply folds one event into s. Events of unknown types only move
// LastSeq.
func (s *State) Apply(ev events.Event) error {
	if ev.Type == events.RunStarted {
		var d events.RunStartedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		if s.RunID != "" && s.RunID != d.RunID {
			return fmt.Errorf("%w: %s into %s", ErrOtherRun, d.RunID, s.RunID)
		}
		*s = State{RunID: d.RunID, TenantID: ev.TenantID, TransactionID: d.TransactionID,
			WorkflowID: d.WorkflowID, SubscriberID: d.SubscriberID, Status: Running,
			Steps: []Step{}, CreatedAt: ev.At}
		s.touch(ev)
		return nil
	}
	if ev.Type == events.SignalReceived {
		// Signals buffer whatever the state; a finished run keeps them
		// for the record but never consumes them.
		var d events.SignalReceivedData
		if err := ev.Decode(&d); err != nil {
			return err
		}
		if !s.Status.Finished() {
			s.Signals = append(s.Signals, Signal{Seq: ev.Seq, Event: d.Event, Payload: d.Payload})
		}
		s.touch(ev)
		return nil
	}
	if ev.Type == events.RunRerun {
		return s.rerun(ev)
	}
	if s.Status.Finished() {
		s.LastSeq = max(s.LastSeq, ev.Seq)
		return nil
	}
	var err error
	switch ev.Type {
	case events.StepCompleted:
		err = s.stepCompleted(ev)
	case events.StepFailed:
		err = s.stepFailed(ev)
	case events.RunSleeping:
		var d events.RunSleepingData
		if err = ev.Decode(&d); err == nil {
			st := s.current(d.StepID, cmp.Or(d.Type, "delay"))
			st.Status = StepSleeping
			st.Attempts++
			if d.Type == "send" {
				until := d.Until
				st.HeldUntil = &until
			}
			s.Status, s.WakeAt, s.WaitEvent, s.Digest = Sleeping, &d.Until, "", d.Digest
		}
	case events.RunWaiting:
		var d events.RunWaitingData
		if err = ev.Decode(&d); err == nil {
			st := s.current(d.StepID, "waitForEvent")
			st.Status = StepWaiting
			st.Attempts++
			s.Status, s.WakeAt, s.WaitEvent = Waiting, d.TimeoutAt, d.Event
		}
	case events.RunSubscriberRecorded:
		var d events.RunSubscriberRecordedData
		if err = ev.Decode(&d); err == nil {
			if s.Subscriber == nil && len(d.Subscriber) > 0 && string(d.Subscriber) != "null" {
				s.Subscriber = d.Subscriber // the first one recorded is the run's
			}
			if s.Controls == nil && len(d.Controls) > 0 {
				s.Controls, s.Locale = d.Controls, d.Locale
			}
			if d.Step != nil {
				s.completeStep(*d.Step)
			}
		}
	case events.RunCompleted:
		var d events.RunCompletedData
		if len(ev.Data) > 0 {
			err = ev.Decode(&d)
		}
		if err == nil {
			if d.Step != nil {
				s.completeStep(*d.Step)
			}
			s.Status, s.WakeAt, s.WaitEvent = Completed, nil, ""
		}
	case events.RunFailed:
		var d events.RunFailedData
		if err = ev.Decode(&d); err == nil {
			// The failure is the named step's, else the step under way's,
			// else the call to the Bridge's.
			e := &Error{Code: d.Code, Message: d.Message}
			st := s.current(d.StepID, d.Type)
			st.Status, st.Error = StepFailed, e
			st.Attempts++
			s.Status, s.Error, s.WakeAt, s.WaitEvent = Failed, e, nil, ""
		}
	case events.RunCancelled:
		var d events.RunCancelledData
		if len(ev.Data) > 0 { // tolerate a cancel recorded without data
			err = ev.Decode(&d)
		}
		if err == nil {
			s.Status, s.WakeAt, s.WaitEvent = Cancelled, nil, ""
			s.Error = &Error{Code: apierr.CodeCancelled, Message: cancelledMessage(d.Reason)}
		}
	case events.RunDigested:
		var d events.RunDigestedData
		if err = ev.Decode(&d); err == nil {
			st := s.current(d.StepID, "digest")
			st.Status = StepDone
			st.Attempts++
			st.Output, _ = json.Marshal(map[string]string{"digestRunId": d.DigestRun})
			s.Status, s.WakeAt, s.WaitEvent = Digested, nil, ""
		}
	}
	if err != nil {
		return err
	}
	if s.Status.Finished() {
		s.settle()
	}
	s.touch(ev)
	return nil
}

// settle ends the steps still under way of a run that just ended, so that
// no step of a finished run reads as retrying, sleeping or waiting: a
// cancel cancels them; a failure fails them; a run that completed without
// them failed them too (the Bridge went on past a step it had failed),
// save the call to the Bridge, which the run's end answered.
func (s *State) settle() {
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Status != StepRetrying && st.Status != StepSleeping && st.Status != StepWaiting {
			continue
		}
		switch {
		case s.Status == Cancelled:
			st.Status = StepCancelled
		case s.Status != Failed && st.Bridge():
			st.Status = StepDone
		default:
			st.Status = StepFailed
		}
	}
}

// rerun resumes a failed run at its failed step, attempts counted afresh;
// on a run that is not failed it only moves LastSeq (a writer checks the
// status before it appends one).
func (s *State) rerun(ev events.Event) error {
	var d events.RunRerunData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	if s.Status != Failed {
		s.LastSeq = max(s.LastSeq, ev.Seq)
		return nil
	}
	if n := len(s.Steps); n > 0 && s.Steps[n-1].Status == StepFailed {
		// The step's last error stays shown until its next try answers.
		st := &s.Steps[n-1]
		st.Status, st.Attempts = StepRetrying, 0
	}
	s.Status, s.Error, s.WakeAt, s.WaitEvent = Running, nil, nil, ""
	s.touch(ev)
	return nil
}

func (s *State) touch(ev events.Event) {
	s.UpdatedAt = ev.At
	s.LastSeq = max(s.LastSeq, ev.Seq)
}

func (s *State) stepCompleted(ev events.Event) error {
	var d events.StepCompletedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	s.completeStep(d)
	return nil
}

// completeStep folds a completed step (of a StepCompleted, the first step
// a RunSubscriberRecorded carries, or the last one a RunCompleted carries).
func (s *State) completeStep(d events.StepCompletedData) {
	st := s.current(d.StepID, d.Type)
	if st.Status != StepSleeping && st.Status != StepWaiting {
		// A sleep or wait counted its one attempt when it began.
		st.Attempts++
	}
	st.Type, st.Status, st.Output, st.Error = d.Type, StepDone, d.Output, nil
	if len(st.Output) == 0 {
		st.Output = json.RawMessage("null")
	}
	if d.SignalSeq != 0 {
		for i, sig := range s.Signals {
			if sig.Seq == d.SignalSeq {
				s.Signals = append(s.Signals[:i:i], s.Signals[i+1:]...)
				break
			}
		}
	}
	s.Status, s.WakeAt, s.WaitEvent, s.Digest = Running, nil, "", ""
}

func (s *State) stepFailed(ev events.Event) error {
	var d events.StepFailedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	st := s.current(d.StepID, d.Type)
	st.Status = StepRetrying
	st.Attempts = d.Attempt
	st.Error = &Error{Code: d.Code, Message: d.Message}
	at := d.RetryAt
	s.Status, s.WakeAt, s.WaitEvent = Running, &at, ""
	return nil
}

// current returns the step in progress with this id, appending it when
// the last step is completed or another step. An empty id names whatever
// step is in progress, else the call to the Bridge (BridgeStep: the
// Bridge failed before naming a step); the call to the Bridge in
// progress becomes the step the Bridge names next. An empty type keeps
// the step's; a step never typed is a run step (see stepTypeUnnamed).
func (s *State) current(stepID, typ string) *Step {
	if n := len(s.Steps); n > 0 {
		last := &s.Steps[n-1]
		// An empty id on record: a state folded before BridgeStep.
		bridge := last.Bridge() || last.StepID == ""
		if last.Status != StepDone && (stepID == "" || last.StepID == stepID || bridge) {
			if stepID != "" && stepID != last.StepID {
				last.StepID = stepID
				if bridge {
					last.Type = "" // the named step is not the Bridge's call
				}
			}
			last.Type = cmp.Or(typ, last.Type, stepTypeUnnamed)
			if last.StepID == "" {
				last.StepID, last.Type = BridgeStep, BridgeStep
			}
			return last
		}
	}
	if stepID == "" {
		stepID, typ = BridgeStep, BridgeStep
	}
	s.Steps = append(s.Steps, Step{StepID: stepID, Type: cmp.Or(typ, stepTypeUnnamed)})
	return &s.Steps[len(s.Steps)-1]
}

// Bridge reports whether the step is the call to the Bridge, not a step
// of the workflow (see BridgeStep).
func (st *Step) Bridge() bool { return st.Type == BridgeStep }

// CompletedSteps returns the completed steps, oldest first: what the
// Bridge replays.
func (s *State) CompletedSteps() []Step {
	out := make([]Step, 0, len(s.Steps))
	for _, st := range s.Steps {
		if st.Status == StepDone {
			out = append(out, st)
		}
	}
	return out
}

// HeldSend returns when the send stepID, the step in progress, was held
// until by quiet hours; false when it was not held.
func (s *State) HeldSend(stepID string) (time.Time, bool) {
	if p := s.Pending(); p != nil && p.StepID == stepID && p.HeldUntil != nil {
		return *p.HeldUntil, true
	}
	return time.Time{}, false
}

// Pending returns the step in progress, or nil.
func (s *State) Pending() *Step {
	if n := len(s.Steps); n > 0 {
		switch st := &s.Steps[n-1]; st.Status {
		case StepRetrying, StepSleeping, StepWaiting:
			return st
		}
	}
	return nil
}

// Signal returns the oldest unconsumed signal named event.
func (s *State) Signal(event string) (Signal, bool) {
	for _, sig := range s.Signals {
		if sig.Event == event {
			return sig, true
		}
	}
	return Signal{}, false
}

// Answered reports whether an answer of the Bridge is on record: a step
// of any status. A run not yet answered may still freeze its subscriber.
func (s *State) Answered() bool { return len(s.Steps) > 0 }

// Clone returns a deep enough copy for a caller to mutate by Apply.
func (s *State) Clone() *State {
	c := *s
	c.Steps = append([]Step(nil), s.Steps...)
	c.Signals = append([]Signal(nil), s.Signals...)
	return &c
}

// cancelledMessage is the error message of a run cancelled for reason
// ("": by the tenant).
func cancelledMessage(reason string) string {
	switch reason {
	case "":
		return "the run was cancelled"
	case events.CancelSubscriberErased:
		return "the run was cancelled: its subscriber was erased"
	case events.CancelTransaction:
		return "the run was cancelled with its transaction"
	}
	return "the run was cancelled: " + reason
}
