package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"time"
)

// Action selects what a [Request] asks of a Bridge.
type Action string

// The actions of the protocol.
const (
	ActionHealth   Action = "health"   // answered with a HealthAnswer
	ActionDiscover Action = "discover" // answered with a DiscoverAnswer
	ActionExecute  Action = "execute"  // answered with an ExecuteAnswer
	// ActionCheck carries an execute request's fields: the Bridge replays
	// the recorded steps and runs no step body at all; it names the first
	// step past them (stepId and type only) or answers completed. Answered
	// with a CheckAnswer.
	ActionCheck Action = "check"
	// ActionPreview runs a workflow as execute does, up to the step its
	// StepID names, running no step body but that step's content
	// function: answered with an ExecuteAnswer.
	ActionPreview Action = "preview"
)

// StepType names a kind of durable step.
type StepType string

// The step types of the protocol.
const (
	StepRun          StepType = "run"
	StepSend         StepType = "send"
	StepDelay        StepType = "delay"
	StepWaitForEvent StepType = "waitForEvent"
	StepDigest       StepType = "digest"
	StepThrottle     StepType = "throttle"
)

// Status values of the 200 answers.
const (
	StatusOK        = "ok"        // HealthAnswer
	StatusStep      = "step"      // ExecuteAnswer carrying the next step
	StatusCompleted = "completed" // ExecuteAnswer: the workflow function returned
	// StatusPreviewNeeds answers a preview that reached a `run` step
	// with neither a recorded output nor a declared sample: its StepID.
	StatusPreviewNeeds = "preview_needs"
)

// Request is the JSON body of every call to a Bridge. ExecuteRequest is nil
// for health and discover: its fields are then absent from the JSON, so
// {"action":"health"} is a whole request.
type Request struct {
	Action Action `json:"action"`
	*ExecuteRequest
}

// ExecuteRequest carries the fields of an execute call. Subscriber is the
// run's subscriber as of the run's start, the same in every request of the
// run; nil for a schedule-triggered run, sent as "subscriber": null.
type ExecuteRequest struct {
	WorkflowID string          `json:"workflowId"`
	RunID      string          `json:"runId"`
	Payload    json.RawMessage `json:"payload"`    // a JSON object; empty is sent as {}
	Subscriber *Subscriber     `json:"subscriber"` // nil: no recipient (cron run)
	Steps      []CompletedStep `json:"steps"`      // completed steps, oldest first; nil is sent as []
	// Links are the subscriber's unsubscribe and preference page URLs for
	// this workflow; nil (absent) when the service has no public URL or
	// the run has no subscriber.
	Links *Links `json:"links,omitempty"`
	// Controls are the values of each step's controls (step id → a JSON
	// object), resolved when the run started for its locale and recorded
	// on the run: the same in every request of the run. Absent when the
	// workflow declares no controls.
	Controls map[string]json.RawMessage `json:"controls,omitempty"`
	// Locale is the locale the run's controls were resolved for ("fr-CA");
	// absent when none.
	Locale string `json:"locale,omitempty"`
	// StepID is the step a preview request previews; absent in execute.
	StepID string `json:"stepId,omitempty"`
}

// Links are URLs a workflow may put in its messages (CONTRACT §12).
// Unsubscribe is nil for a critical workflow (it cannot be turned off).
type Links struct {
	Unsubscribe *string `json:"unsubscribe"`
	Preferences string  `json:"preferences"`
}

// Subscriber is the single recipient of a run, as the engine forwards it.
type Subscriber struct {
	SubscriberID string              `json:"subscriberId"`
	Contacts     map[string][]string `json:"contacts,omitempty"` // kind → addresses, e.g. "email"
	Locale       string              `json:"locale,omitempty"`
	Attributes   map[string]any      `json:"attributes,omitempty"`
	// Timezone is the subscriber's IANA time zone name ("Europe/Paris");
	// empty when it has none (its time is then UTC).
	Timezone string `json:"timezone,omitempty"`
}

// CompletedStep is one entry of ExecuteRequest.Steps: a step the engine has
// recorded, with its output (the JSON null when the step has none).
type CompletedStep struct {
	StepID string          `json:"stepId"`
	Type   StepType        `json:"type"`
	Output json.RawMessage `json:"output"`
}

// HealthAnswer is the 200 answer to a health request.
type HealthAnswer struct {
	Status    string `json:"status"`    // StatusOK
	Workflows int    `json:"workflows"` // number of registered workflows
}

// DiscoverAnswer is the 200 answer to a discover request.
type DiscoverAnswer struct {
	Workflows []WorkflowInfo `json:"workflows"`
}

// WorkflowInfo describes one registered workflow. Schedule is nil for an
// event-triggered workflow; PayloadSchema is the JSON null when unset.
// Critical (sends ignore subscribers' preferences) and Preferences (the
// workflow's default preferences) are absent when unset.
type WorkflowInfo struct {
	WorkflowID    string               `json:"workflowId"`
	Schedule      *string              `json:"schedule"`
	PayloadSchema json.RawMessage      `json:"payloadSchema"`
	Critical      bool                 `json:"critical,omitempty"`
	Preferences   *WorkflowPreferences `json:"preferences,omitempty"`
	// Name and Description are what people see of the workflow (the
	// preference page, GET /v1/workflows): a short display name and a
	// sentence. Absent when unset; the page then shows the workflow id.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Controls are the JSON Schemas of the values teammates may edit, by
	// step id: each a "type":"object" schema whose properties each have a
	// default. Absent when the workflow declares none.
	Controls map[string]json.RawMessage `json:"controls,omitempty"`
}

// WorkflowPreferences are a workflow's default preferences: per channel
// kind ("email", …), whether a subscriber who set nothing for the kind
// receives the workflow's sends of it.
type WorkflowPreferences struct {
	Channels map[string]bool `json:"channels"`
}

// ExecuteAnswer is the 200 answer to an execute request: either
// {"status":"completed"} or {"status":"step","step":{…}}.
type ExecuteAnswer struct {
	Status string `json:"status"` // StatusStep, StatusCompleted or StatusPreviewNeeds
	Step   *Step  `json:"step,omitempty"`
	// StepID names the `run` step a preview needs a sample of
	// (StatusPreviewNeeds).
	StepID string `json:"stepId,omitempty"`
}

// CheckAnswer is the 200 answer to a check request: {"status":"completed"}
// or {"status":"step","step":{"stepId","type"}}, the step the code asks
// for after the recorded ones, neither run nor described.
type CheckAnswer struct {
	Status string   `json:"status"` // StatusStep or StatusCompleted
	Step   *StepRef `json:"step,omitempty"`
}

// StepRef names a step: its id and type.
type StepRef struct {
	StepID string   `json:"stepId"`
	Type   StepType `json:"type"`
}

// Codes of a Bridge's error answers that the service reads: it records
// the first two, and the fourth, as the run's error code, and signs a
// replayed request afresh.
const (
	CodeNondeterministic = "nondeterministic"  // 422: the replay diverged
	CodeDuplicateStepID  = "duplicate_step_id" // 422: two steps of one id
	CodeReplayed         = "replayed"          // 409: a signed request seen before
	CodeInvalidStep      = "invalid_step"      // 500 with stepId: a step called with invalid arguments
)

// ErrorBody is the body of every non-200 answer of a Bridge.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is the content of an ErrorBody. StepID names the failed step of a
// 500, when the failure happened inside one.
type ErrorInfo struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	StepID  string `json:"stepId,omitempty"`
}

// Step is the step a Bridge executed or describes in an ExecuteAnswer. Which
// fields are set depends on Type:
//
//   - run: Output, the callback's result (JSON null when it has none).
//   - send: Channel (a channel kind such as "email"), Content, the JSON
//     object of the kind's content (EmailContent, SMSContent, … at most
//     256 KiB), and To, a subscriber id overriding the run's recipient
//     (nil: the run's subscriber).
//   - delay: exactly one of Seconds, Until and LocalTime.
//   - waitForEvent: Event, and Timeout (nil: wait forever).
//   - digest: exactly one of Window and Cron, and Key (nil: one digest per
//     workflow and subscriber).
//   - throttle: Limit (at least 1), Window (positive, at most
//     MaxThrottleWindow), and Key (nil: one count per workflow and
//     subscriber).
//
// Marshalled, a Step carries exactly its type's fields, optional ones as null.
type Step struct {
	StepID  string          `json:"stepId"`
	Type    StepType        `json:"type"`
	Output  json.RawMessage `json:"output,omitempty"`
	Channel string          `json:"channel,omitempty"`
	To      *string         `json:"to,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	Seconds *float64        `json:"seconds,omitempty"`
	Until   *time.Time      `json:"until,omitempty"`
	Event   string          `json:"event,omitempty"`
	Timeout *Duration       `json:"timeout,omitempty"`
	Window  *Duration       `json:"window,omitempty"`
	Key     *string         `json:"key,omitempty"`
	Limit   *int64          `json:"limit,omitempty"`
	// LocalTime ("HH:MM") is a delay until the next time the subscriber's
	// clock reads it, in its time zone (UTC without one); on the wire
	// "until":{"localTime":"09:00"}.
	LocalTime string `json:"-"`
	// Cron is a digest's schedule: the window closes at the expression's
	// next instant in the subscriber's time zone (UTC without one).
	Cron *string `json:"cron,omitempty"`
}

// localUntil is the "until" of a delay to a local time.
type localUntil struct {
	LocalTime string `json:"localTime"`
}

// UnmarshalJSON reads a step, whose "until" is either an RFC 3339 instant
// (Until) or {"localTime":"HH:MM"} (LocalTime).
func (s *Step) UnmarshalJSON(b []byte) error {
	type plain Step // no methods: the default decoding
	var v struct {
		plain
		Until json.RawMessage `json:"until"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Step(v.plain)
	u := bytes.TrimSpace(v.Until)
	switch {
	case len(u) == 0 || bytes.Equal(u, []byte("null")):
	case u[0] == '{':
		var l localUntil
		if err := json.Unmarshal(u, &l); err != nil {
			return err
		}
		if l.LocalTime == "" {
			return errors.New("wire: until is an object without localTime")
		}
		s.LocalTime = l.LocalTime
	default:
		var t time.Time
		if err := json.Unmarshal(u, &t); err != nil {
			return err
		}
		s.Until = &t
	}
	return nil
}

// ParseLocalTime reads a local time of day "HH:MM", 00:00 to 23:59.
func ParseLocalTime(s string) (hour, minute int, ok bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, 0, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, 0, false
		}
	}
	hour, minute = int(s[0]-'0')*10+int(s[1]-'0'), int(s[3]-'0')*10+int(s[4]-'0')
	return hour, minute, hour < 24 && minute < 60
}

// ResumeAt returns when a delay step ends: Until when set, else now plus
// Seconds. It returns now for a step that is not a delay.
func (s Step) ResumeAt(now time.Time) time.Time {
	switch {
	case s.Type != StepDelay:
		return now
	case s.Until != nil:
		return *s.Until
	case s.Seconds != nil:
		return now.Add(time.Duration(*s.Seconds * float64(time.Second)))
	}
	return now
}

// MarshalJSON writes the fields of the step's type only, in the order of the
// protocol, with absent optional fields as null.
func (s Step) MarshalJSON() ([]byte, error) {
	type head struct {
		StepID string   `json:"stepId"`
		Type   StepType `json:"type"`
	}
	h := head{s.StepID, s.Type}
	switch s.Type {
	case StepRun:
		out := s.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		return Marshal(struct {
			head
			Output json.RawMessage `json:"output"`
		}{h, out})
	case StepSend:
		return Marshal(struct {
			head
			Channel string          `json:"channel"`
			To      *string         `json:"to"`
			Content json.RawMessage `json:"content"`
		}{h, s.Channel, s.To, orNull(s.Content)})
	case StepDelay:
		if s.LocalTime != "" {
			return Marshal(struct {
				head
				Until localUntil `json:"until"`
			}{h, localUntil{s.LocalTime}})
		}
		return Marshal(struct {
			head
			Seconds *float64   `json:"seconds,omitempty"`
			Until   *time.Time `json:"until,omitempty"`
		}{h, s.Seconds, s.Until})
	case StepWaitForEvent:
		return Marshal(struct {
			head
			Event   string    `json:"event"`
			Timeout *Duration `json:"timeout"`
		}{h, s.Event, s.Timeout})
	case StepDigest:
		if s.Cron != nil {
			return Marshal(struct {
				head
				Cron string  `json:"cron"`
				Key  *string `json:"key"`
			}{h, *s.Cron, s.Key})
		}
		return Marshal(struct {
			head
			Window *Duration `json:"window"`
			Key    *string   `json:"key"`
		}{h, s.Window, s.Key})
	case StepThrottle:
		return Marshal(struct {
			head
			Limit  *int64    `json:"limit"`
			Window *Duration `json:"window"`
			Key    *string   `json:"key"`
		}{h, s.Limit, s.Window, s.Key})
	}
	type plain Step // no MarshalJSON method: every non-empty field
	return Marshal(plain(s))
}

// SendContent is a subject and a body: the content of the SDK's Send, a
// subset of EmailContent, SMSContent, ChatContent and InAppContent.
// Subject is omitted when empty.
type SendContent struct {
	Subject string `json:"subject,omitempty"`
	Body    string `json:"body"`
}

// SendResult is the output of a send step: the delivery attempt the service
// recorded. Status is SendSent, or SendSkipped with a Reason.
type SendResult struct {
	AttemptID         string     `json:"attemptId"`
	Status            string     `json:"status"`
	Reason            SkipReason `json:"reason,omitempty"`
	ProviderMessageID string     `json:"providerMessageId,omitempty"`
	// HeldUntil is set when the subscriber's quiet hours held the send:
	// it went out once they ended, at this instant.
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
}

// Skipped reports whether the service skipped the send (Reason says why):
// the step completed without a message, and the run goes on.
func (r SendResult) Skipped() bool { return r.Status == SendSkipped }

// Statuses of a SendResult.
const (
	SendSent    = "sent"    // a provider took the message
	SendSkipped = "skipped" // no message was sent; see SendResult.Reason
)

// SkipReason is why a send was skipped.
type SkipReason string

// The reasons of a skipped send (CONTRACT §10).
const (
	SkipNoAddress  SkipReason = "no_address" // the recipient has no address of the channel's kind
	SkipPreference SkipReason = "preference" // the recipient opted out
	SkipSuppressed SkipReason = "suppressed" // the address is suppressed (bounces, complaints)
)

// DigestResult is the output of a digest step. Count includes the run that
// opened the window; Events are the digested triggers, oldest first.
type DigestResult struct {
	Count  int           `json:"count"`
	Events []DigestEvent `json:"events"`
}

// DigestEvent is one trigger gathered by a digest window.
type DigestEvent struct {
	Payload map[string]any `json:"payload"`
	RunID   string         `json:"runId"`
	At      time.Time      `json:"at"`
}

// ThrottleResult is the output of a throttle step. Count is the number of
// runs of one (workflow, subscriber, key) that reached a throttle step within
// its window, this one included, throttled or not; Throttled is Count over
// the step's limit. The run goes on either way: the workflow decides.
type ThrottleResult struct {
	Throttled bool `json:"throttled"`
	Count     int  `json:"count"`
}

// MaxThrottleWindow bounds a throttle step's window: the counts of a window
// are kept in memory by the service, and a month is longer than any rate a
// notification is limited to.
const MaxThrottleWindow = 31 * 24 * time.Hour

// Marshal is json.Marshal without HTML escaping, as both sides write every
// body of the protocol: bodies of e-mails carry markup, and "<" is better
// read as "<" than as "\u003c".
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// orNull returns raw, or the JSON null when raw is empty.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

var workflowIDPattern = regexp.MustCompile(`^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$`)

// ValidWorkflowID reports whether id is a valid workflow id: it matches
// ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ (letters, digits and underscores, not
// starting with a digit, and not a lone "_").
func ValidWorkflowID(id string) bool { return workflowIDPattern.MatchString(id) }
