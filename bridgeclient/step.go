// What a step the Bridge answers must be: the checks that make a bad
// value fail the run at once as invalid_step, and the bounds of an answer.

package bridgeclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
)

// A StepProblem is a step the Bridge answered with a value Herald cannot
// act on: a retry would get the same answer, so the run fails at once
// with [apierr.CodeInvalidStep]. Its message names the step, its type,
// the field and what the field must be, never the value (text that came
// from the network).
type StepProblem struct {
	StepID string
	Type   wire.StepType // "" when the step has no type Herald knows
	Field  string        // "seconds", "until.localTime", "window", …
	Must   string        // what the field must be: "must be …"
}

// Error is the message of the run's and the step's error.
func (p *StepProblem) Error() string {
	step := "step"
	if p.Type != "" {
		step = string(p.Type) + " step"
	}
	if p.StepID == "" {
		step = "a " + step
	} else {
		step = fmt.Sprintf("%s %q", step, p.StepID)
	}
	return fmt.Sprintf("invalid step from the bridge: %s: %s %s", step, p.Field, p.Must)
}

// What a field must be, in the words of a StepProblem.
const (
	mustID         = "must be a non-empty string"
	mustType       = "must be one of run, send, delay, waitForEvent, digest, throttle"
	mustContent    = "must be a JSON object"
	mustSeconds    = "must be a number of seconds from 0 to 9223372036"
	mustUntil      = `must be an RFC 3339 time or {"localTime":"HH:MM"}`
	mustLocalTime  = "must be a time of day HH:MM, 00:00 to 23:59"
	mustOneOfDelay = "must be exactly one of seconds, until and until.localTime"
	mustDuration   = `must be a number of seconds (0 or more) or a duration string such as "90m" or "2d"`
	mustWindow     = `must be over 0: a number of seconds or a duration string such as "1h"`
	mustCron       = "must be a non-empty cron expression"
	mustNotBoth    = "must be one of window and cron, not both"
	mustLimit      = "must be a whole number, at least 1"
	mustString     = "must be a string"
	mustKey        = "must be a string or null"
)

// mustThrottleWindow is what a throttle's window must be.
var mustThrottleWindow = fmt.Sprintf("must be over 0 and at most %s (31 days)", wire.MaxThrottleWindow)

// fieldMust is what field must be, for a value of it that does not decode.
func fieldMust(typ wire.StepType, field string) string {
	switch field {
	case "stepId", "channel", "event":
		return mustID
	case "type":
		return mustType
	case "content":
		return mustContent
	case "seconds":
		return mustSeconds
	case "until":
		return mustUntil
	case "timeout":
		return mustDuration
	case "window":
		if typ == wire.StepThrottle {
			return mustThrottleWindow
		}
		return mustWindow
	case "limit":
		return mustLimit
	case "key":
		return mustKey
	}
	return mustString
}

// check validates a step answered by a Bridge: what the engine needs of
// each type is there and holds a value the engine can act on. It returns
// the first problem, nil when there is none. (A digest's cron is read,
// and its ticks found, by the engine in the subscriber's time zone.)
func check(s *wire.Step) *StepProblem {
	known := knownType(s.Type)
	problem := func(field, must string) *StepProblem {
		return &StepProblem{StepID: s.StepID, Type: known, Field: field, Must: must}
	}
	if s.StepID == "" {
		return problem("stepId", mustID)
	}
	switch s.Type {
	case wire.StepRun:
		if len(s.Output) == 0 {
			s.Output = json.RawMessage("null")
		}
	case wire.StepSend:
		switch {
		case s.Channel == "":
			return problem("channel", mustID)
		case len(s.Content) == 0 || string(s.Content) == "null" || !isObject(s.Content):
			return problem("content", mustContent)
		case s.To != nil && *s.To == "":
			return problem("to", "must be a non-empty string or absent")
		}
	case wire.StepDelay:
		switch {
		case count(s.Seconds != nil, s.Until != nil, s.LocalTime != "") != 1:
			return problem("seconds/until", mustOneOfDelay)
		case s.LocalTime != "" && !validLocalTime(s.LocalTime):
			return problem("until.localTime", mustLocalTime)
		case s.Seconds != nil && (*s.Seconds < 0 || *s.Seconds > wire.MaxSeconds):
			return problem("seconds", mustSeconds)
		}
	case wire.StepWaitForEvent:
		if s.Event == "" {
			return problem("event", mustID)
		}
	case wire.StepDigest:
		switch {
		case s.Window != nil && s.Cron != nil:
			return problem("window/cron", mustNotBoth)
		case s.Cron != nil && *s.Cron == "":
			return problem("cron", mustCron)
		case s.Cron == nil && (s.Window == nil || s.Window.Duration() <= 0):
			return problem("window", mustWindow)
		}
	case wire.StepThrottle:
		switch {
		case s.Limit == nil || *s.Limit < 1:
			return problem("limit", mustLimit)
		case s.Window == nil || s.Window.Duration() <= 0 || s.Window.Duration() > wire.MaxThrottleWindow:
			return problem("window", mustThrottleWindow)
		}
	default:
		return problem("type", mustType)
	}
	return nil
}

// knownType is t when it is a step type Herald knows, else "".
func knownType(t wire.StepType) wire.StepType {
	switch t {
	case wire.StepRun, wire.StepSend, wire.StepDelay, wire.StepWaitForEvent, wire.StepDigest, wire.StepThrottle:
		return t
	}
	return ""
}

// undecodable finds, in an answer that does not decode, a step field
// whose value does not (a negative window, a fractional limit, a
// seconds that is a string, an until that is no time): the answer is
// well formed, the step is not. It returns nil when the answer is not a
// step answer at all, or names no such field.
func undecodable(body []byte) *StepProblem {
	var raw struct {
		Status string                     `json:"status"`
		Step   map[string]json.RawMessage `json:"step"`
	}
	if json.Unmarshal(body, &raw) != nil || raw.Status != wire.StatusStep || raw.Step == nil {
		return nil
	}
	p := &StepProblem{}
	if json.Unmarshal(raw.Step["stepId"], &p.StepID) != nil || !validID(p.StepID) {
		p.StepID = ""
	}
	var typ string
	if json.Unmarshal(raw.Step["type"], &typ) == nil {
		p.Type = knownType(wire.StepType(typ))
	}
	names := make([]string, 0, len(raw.Step))
	for name := range raw.Step {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		one, err := json.Marshal(map[string]json.RawMessage{name: raw.Step[name]})
		var s wire.Step
		if err != nil || json.Unmarshal(one, &s) != nil {
			if !knownStepFields[name] {
				return nil // not echoed, nor named: some other answer
			}
			p.Field, p.Must = name, fieldMust(p.Type, name)
			return p
		}
	}
	return nil
}

// invalidStep is the outcome of a step with an invalid value.
func invalidStep(o Outcome, p *StepProblem) Outcome {
	o.Kind, o.Code, o.StepID = OutcomeTerminal, apierr.CodeInvalidStep, p.StepID
	o.Message = clip(p.Error())
	o.Detail = o.Message
	return o
}

// count is how many of conds hold.
func count(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}

func validLocalTime(s string) bool { _, _, ok := wire.ParseLocalTime(s); return ok }

// Bounds on what a Bridge answers. An answer over one of them fails the
// run terminally with [apierr.CodeInvalidStep]: retrying would only get the same
// answer, and the engine could not record it (event subjects and messages
// have hard limits). The outcome's message names the field and the sizes,
// never the text that broke the bound.
const (
	// MaxIDChars bounds, in characters, a step's stepId, event, channel,
	// to, key and cron, and the stepId of a 500 answer.
	MaxIDChars = 256
	// MaxOutputBytes bounds a run step's output, in bytes of JSON.
	MaxOutputBytes = 1 << 20
	// MaxContentBytes bounds a send step's content, in bytes of JSON.
	MaxContentBytes = 256 << 10
	// MaxAnswerBytes bounds the whole body of an answer a Client reads.
	MaxAnswerBytes = 2 << 20
)

// validID reports whether a Bridge-supplied id is within MaxIDChars
// (the empty id is within; whether it may be empty is check's business).
func validID(s string) bool {
	return len(s) <= MaxIDChars || utf8.RuneCountInString(s) <= MaxIDChars
}

// bounds reports the first field of s over its bound, whatever the type
// (a field foreign to the type is not recorded, but it is not trusted
// either).
func bounds(s *wire.Step) error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"stepId", &s.StepID}, {"event", &s.Event}, {"channel", &s.Channel}, {"to", s.To}, {"key", s.Key}, {"cron", s.Cron}} {
		if f.v != nil && !validID(*f.v) {
			return fmt.Errorf("invalid step from the bridge: %s is over %d characters", f.name, MaxIDChars)
		}
	}
	if !validID(string(s.Type)) {
		return fmt.Errorf("invalid step from the bridge: type is over %d characters", MaxIDChars)
	}
	if len(s.Output) > MaxOutputBytes {
		return fmt.Errorf("invalid step from the bridge: a run output of %d bytes, over %d", len(s.Output), MaxOutputBytes)
	}
	if len(s.Content) > MaxContentBytes {
		return fmt.Errorf("invalid step from the bridge: a send content of %d bytes, over %d", len(s.Content), MaxContentBytes)
	}
	return nil
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// maxRawFieldBytes bounds the JSON of a step field other than output and
// content: MaxIDChars characters, each escaped (\uXXXX) at worst.
const maxRawFieldBytes = 6*MaxIDChars + 2

// knownStepFields are the fields of a step, which rawOverBound may name.
var knownStepFields = map[string]bool{"stepId": true, "type": true, "output": true, "channel": true, "to": true,
	"content": true, "seconds": true, "until": true, "event": true, "timeout": true, "window": true, "key": true, "limit": true,
	"cron": true}

// rawOverBound looks into an answer that does not decode for a field over
// its bound (a 10 KB duration or timestamp, say): such an answer is no
// glitch worth retrying. It returns why, or "".
func rawOverBound(body []byte) string {
	var raw struct {
		Status json.RawMessage            `json:"status"`
		Step   map[string]json.RawMessage `json:"step"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return ""
	}
	if len(raw.Status) > maxRawFieldBytes {
		return "invalid answer from the bridge: status is over its bound"
	}
	for name, v := range raw.Step {
		limit := maxRawFieldBytes
		switch name {
		case "output":
			limit = MaxOutputBytes
		case "content":
			limit = MaxContentBytes
		}
		if len(v) > limit {
			if !knownStepFields[name] {
				name = "a field" // not echoed: the text came from the network
			}
			return fmt.Sprintf("invalid step from the bridge: %s is over its bound", name)
		}
	}
	return ""
}
