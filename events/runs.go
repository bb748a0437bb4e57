package events

import (
	"encoding/json"
	"time"
)

// Run event types, on the run's subject (aggregate run, id = run id).
const (
	RunStarted     = "RunStarted"
	StepCompleted  = "StepCompleted"
	StepFailed     = "StepFailed"
	RunSleeping    = "RunSleeping"
	RunWaiting     = "RunWaiting"
	SignalReceived = "SignalReceived"
	RunCompleted   = "RunCompleted"
	RunFailed      = "RunFailed"
	RunCancelled   = "RunCancelled"
	RunDigested    = "RunDigested"
	// RunSubscriberRecorded freezes the run's subscriber at its first
	// turn, before any answer of the Bridge is recorded, or together with
	// the first one (RunSubscriberRecordedData.Step).
	RunSubscriberRecorded = "RunSubscriberRecorded"
)

// RunStartedData starts a run. The trigger payload is not copied here: it
// is read once from the transaction's TriggerAccepted.
type RunStartedData struct {
	RunID         string `json:"runId"`
	TransactionID string `json:"transactionId"`
	WorkflowID    string `json:"workflowId"`
	// SubscriberID is the run's one recipient; nil for a cron run.
	SubscriberID *string `json:"subscriberId"`
}

// RunSubscriberRecordedData is the run's subscriber as the Bridge sees it
// (the JSON of the Bridge protocol's subscriber), read from the current
// subscriber at the run's first turn: every execute request of the run
// carries it, whatever the subscriber becomes later. It holds personal
// data: erasing the subscriber deletes this event, and with it the step
// it carries, if any.
type RunSubscriberRecordedData struct {
	Subscriber json.RawMessage `json:"subscriber"`
	// Step, when set, is the run's first answer, a completed `run` step,
	// recorded in the same event as the subscriber it was answered for
	// (one append instead of two); it folds as a StepCompleted right
	// after the subscriber.
	Step *StepCompletedData `json:"step,omitempty"`
	// Controls, when set, are the values of the workflow's step controls
	// resolved at the run's first turn for Locale (a JSON object: step
	// id → values): every execute request of the run carries them,
	// whatever is edited later. A cron run records them with a null
	// Subscriber.
	Controls json.RawMessage `json:"controls,omitempty"`
	Locale   string          `json:"locale,omitempty"`
}

// StepCompletedData records a step's result, replayed to the Bridge ever
// after.
type StepCompletedData struct {
	StepID string          `json:"stepId"`
	Type   string          `json:"type"`
	Output json.RawMessage `json:"output"`
	// SignalSeq is the sequence of the SignalReceived a waitForEvent step
	// consumed (0: none, it timed out).
	SignalSeq uint64 `json:"signalSeq,omitempty"`
}

// StepFailedData records a failed try of a step that will be retried at
// RetryAt. StepID may be empty when the Bridge failed before naming a step.
type StepFailedData struct {
	StepID  string    `json:"stepId"`
	Type    string    `json:"type,omitempty"`
	Attempt int       `json:"attempt"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
	RetryAt time.Time `json:"retryAt"`
}

// RunSleepingData: the run waits until Until, for a delay step or for the
// digest window it opened.
type RunSleepingData struct {
	StepID string    `json:"stepId"`
	Until  time.Time `json:"until"`
	// Type is the sleeping step's type: "delay" (when empty), "digest",
	// or "send" (a send held by the subscriber's quiet hours until Until).
	Type string `json:"type,omitempty"`
	// Digest is the DigestID of the window a digest step waits out.
	Digest string `json:"digest,omitempty"`
	// Reason says why a send sleeps: SleepQuietHours. The decision is
	// recorded, never taken again: the send goes at Until whatever the
	// subscriber's preferences say by then.
	Reason string `json:"reason,omitempty"`
	// QuietHours is the window that held the send ({"start","end"}), read
	// in Timezone (empty: UTC).
	QuietHours json.RawMessage `json:"quietHours,omitempty"`
	Timezone   string          `json:"timezone,omitempty"`
}

// SleepQuietHours: a send held until the end of the subscriber's quiet
// hours (RunSleepingData.Reason).
const SleepQuietHours = "quiet_hours"

// RunWaitingData: the run waits for a signal named Event, or for
// TimeoutAt when set.
type RunWaitingData struct {
	StepID    string     `json:"stepId"`
	Event     string     `json:"event"`
	TimeoutAt *time.Time `json:"timeoutAt,omitempty"`
}

// SignalReceivedData buffers an external event for the run.
type SignalReceivedData struct {
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

// RunCompletedData: the workflow function returned.
type RunCompletedData struct {
	// Step, when set, is the completion of the run's last step (the step
	// whose result the Bridge answered the run's end to), recorded in the
	// same event as the end (one append instead of two); it folds as a
	// StepCompleted right before the end. A RunCompleted without it (every
	// one written before it existed) ends the run alone.
	Step *StepCompletedData `json:"step,omitempty"`
}

// RunFailedData ends a run with a terminal failure of the step StepID, of
// type Type. An empty StepID names the step in progress, else the call to
// the Bridge; an empty Type, the type the step had (failures recorded
// before the field have none).
type RunFailedData struct {
	StepID  string `json:"stepId,omitempty"`
	Type    string `json:"type,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// RunCancelledData ends a run at a tenant's request, or for Reason.
type RunCancelledData struct {
	// Reason is why Herald cancelled the run itself (CancelSubscriberErased,
	// CancelTransaction); empty when the tenant cancelled the run alone.
	Reason string `json:"reason,omitempty"`
	// Actor is who asked: the prefix of the API key that authenticated the
	// request ("hk_…", never the key); empty when Herald cancelled the run
	// on its own (an erase) or the cancel predates actors.
	Actor string `json:"actor,omitempty"`
	// AtStart marks a run its transaction's fan-out started after the
	// transaction was cancelled: cancelled with its start, it never took a
	// turn (the Bridge was never called for it).
	AtStart bool `json:"atStart,omitempty"`
}

// CancelTransaction is the RunCancelledData.Reason of a run cancelled with
// its whole transaction (TransactionCancelled, on the transaction's
// subject, says who and when).
const CancelTransaction = "transaction_cancelled"

// CancelSubscriberErased is the RunCancelledData.Reason of a run whose
// subscriber was erased: going on, it would run without the subscriber
// and its erased payload.
const CancelSubscriberErased = "subscriber_erased"

// RunDigestedData ends a run that joined another run's digest window.
type RunDigestedData struct {
	StepID    string `json:"stepId"`
	DigestRun string `json:"digestRunId"`
}
