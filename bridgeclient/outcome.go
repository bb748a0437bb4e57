package bridgeclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/egress"
)

// OutcomeKind says what the engine should do after an execute call.
type OutcomeKind int

// The kinds of [Outcome].
const (
	// OutcomeCompleted: the workflow function returned; the run is completed.
	OutcomeCompleted OutcomeKind = iota + 1
	// OutcomeStep: Outcome.Step is the step the Bridge ran or describes.
	OutcomeStep
	// OutcomeRetryable: the step failed in a way worth retrying with backoff.
	OutcomeRetryable
	// OutcomeTerminal: retrying cannot help; the run fails with Outcome.Code.
	OutcomeTerminal
	// OutcomePreviewNeeds: a preview reached the `run` step Outcome.StepID
	// with neither a recorded output nor a declared sample (never the
	// outcome of an execute call).
	OutcomePreviewNeeds
)

// String returns the kind's name, for logs.
func (k OutcomeKind) String() string {
	switch k {
	case OutcomeCompleted:
		return "completed"
	case OutcomeStep:
		return "step"
	case OutcomeRetryable:
		return "retryable"
	case OutcomeTerminal:
		return "terminal"
	case OutcomePreviewNeeds:
		return "preview_needs"
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome classifies the answer to an execute call.
//
//	200 {"status":"completed"}           Completed
//	200 {"status":"step","step":{…}}     Step (Step set, already validated)
//	200 with a field over its bound      Terminal   invalid_step (see MaxIDChars…)
//	200 a step with an invalid value     Terminal   invalid_step (StepID set; see check)
//	200 anything else                    Retryable  bridge_invalid_answer
//	401                                  Terminal   bridge_unauthorized
//	404                                  Terminal   workflow_not_found
//	422                                  Terminal   the body's code (nondeterministic, duplicate_step_id…)
//	400                                  Terminal   bridge_bad_request
//	408, 425, 429, 409 replayed          Retryable  bridge_error
//	other 4xx                            Terminal   bridge_rejected
//	3xx (redirects are not followed)     Terminal   bridge_rejected
//	500 with a stepId                    Retryable  step_failed (StepID set)
//	500 with a stepId over MaxIDChars    Terminal   invalid_step
//	500 invalid_step                     Terminal   invalid_step (StepID set; a step called with invalid arguments)
//	other 500                            Retryable  bridge_error
//	  (a 500's Message: the Bridge's own when its body is a Bridge error body)
//	other 5xx                            Retryable  bridge_error
//	no answer (network, timeout)         Retryable  bridge_unreachable (HTTPStatus 0)
//	any answer over MaxAnswerBytes       Terminal   invalid_step (Client.Execute)
//	address refused by an egress policy  Terminal   egress_refused (HTTPStatus 0)
//
// Code, Message and Detail are empty for Completed and Step. Message is
// safe to show the tenant: a fixed sentence naming the status at most,
// never text that came from the network (the URL may reach a service that
// is not the tenant's, whose answer must not leak), with one exception: a
// 500 whose body is exactly a Bridge error body
// {"error":{"message":"…"[,"code"][,"stepId"]}}, or a 422 of such a body
// with the code nondeterministic or duplicate_step_id, shows the Bridge's own
// message (cleaned, at most [MaxBridgeMessageChars]), so that a tenant
// debugging a failed step sees why. Detail adds what the answer or the
// failure said, clipped to 1 KiB, for the operator's log.
type Outcome struct {
	Kind       OutcomeKind
	Step       *wire.Step
	HTTPStatus int
	Code       string
	Message    string
	Detail     string
	StepID     string
}

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// outcomeOf classifies an HTTP answer to an execute call.
func outcomeOf(status int, body []byte) Outcome {
	o := Outcome{HTTPStatus: status}
	info, hasInfo := errorInfo(body)
	fail := func(kind OutcomeKind, code string) Outcome {
		o.Kind, o.Code = kind, code
		o.Message = answered(status)
		o.Detail = o.Message
		if hasInfo && info.Message != "" {
			o.Detail = clip(info.Message)
		}
		return o
	}
	switch {
	case status == http.StatusOK:
		var a wire.ExecuteAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			if why := rawOverBound(body); why != "" {
				o.Kind, o.Code, o.Message = OutcomeTerminal, apierr.CodeInvalidStep, why
				return o
			}
			if p := undecodable(body); p != nil {
				return invalidStep(o, p)
			}
			return invalidAnswer(o, fmt.Sprintf("not an execute answer: %v", err))
		}
		switch a.Status {
		case wire.StatusCompleted:
			o.Kind = OutcomeCompleted
			return o
		case wire.StatusPreviewNeeds:
			if a.StepID == "" || !validID(a.StepID) {
				return invalidAnswer(o, `status "preview_needs" without a valid stepId`)
			}
			o.Kind, o.StepID = OutcomePreviewNeeds, a.StepID
			return o
		case wire.StatusStep:
			if a.Step == nil {
				return invalidAnswer(o, `status "step" without a step`)
			}
			if err := bounds(a.Step); err != nil {
				o.Kind, o.Code, o.Message = OutcomeTerminal, apierr.CodeInvalidStep, clip(err.Error())
				return o
			}
			if p := check(a.Step); p != nil {
				return invalidStep(o, p)
			}
			o.Kind, o.Step = OutcomeStep, a.Step
			return o
		}
		if !validID(a.Status) {
			o.Kind, o.Code, o.Message = OutcomeTerminal, apierr.CodeInvalidStep, "invalid answer from the bridge: status is over its bound"
			return o
		}
		return invalidAnswer(o, fmt.Sprintf("unknown status %q", a.Status))
	case status == http.StatusUnauthorized:
		return fail(OutcomeTerminal, apierr.CodeBridgeUnauthorized)
	case status == http.StatusNotFound:
		return fail(OutcomeTerminal, apierr.CodeWorkflowNotFound)
	case status == http.StatusUnprocessableEntity:
		if hasInfo && (info.Code == wire.CodeNondeterministic || info.Code == wire.CodeDuplicateStepID) {
			// The SDKs name the step's position and both sides: the
			// tenant needs them to find the change that broke the run.
			return thrown(fail(OutcomeTerminal, info.Code), body)
		}
		if hasInfo && codePattern.MatchString(info.Code) {
			return fail(OutcomeTerminal, info.Code)
		}
		return fail(OutcomeTerminal, apierr.CodeBridgeRejected)
	case status == http.StatusBadRequest:
		return fail(OutcomeTerminal, apierr.CodeBridgeBadRequest)
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return fail(OutcomeRetryable, apierr.CodeBridgeError)
	case status == http.StatusConflict && hasInfo && info.Code == wire.CodeReplayed:
		// Another process sent the same bytes in the same second: the
		// next attempt is signed afresh.
		return fail(OutcomeRetryable, apierr.CodeBridgeError)
	case status >= 400 && status < 500:
		return fail(OutcomeTerminal, apierr.CodeBridgeRejected)
	case status == http.StatusInternalServerError && hasInfo && !validID(info.StepID):
		o.Kind, o.Code = OutcomeTerminal, apierr.CodeInvalidStep
		o.Message = fmt.Sprintf("the bridge named a failed step by an id over %d characters", MaxIDChars)
		return o
	case status == http.StatusInternalServerError && hasInfo && info.Code == wire.CodeInvalidStep:
		// The SDK refused the step's arguments: calling it again calls
		// it alike.
		o = thrown(fail(OutcomeTerminal, apierr.CodeInvalidStep), body)
		o.StepID = info.StepID
		if info.StepID != "" {
			o.Message = fmt.Sprintf("invalid step %q: %s", info.StepID, o.Message)
		}
		return o
	case status == http.StatusInternalServerError && hasInfo && info.StepID != "":
		o.StepID = info.StepID
		return thrown(fail(OutcomeRetryable, apierr.CodeStepFailed), body)
	case status == http.StatusInternalServerError:
		return thrown(fail(OutcomeRetryable, apierr.CodeBridgeError), body)
	case status >= 500 && status < 600:
		return fail(OutcomeRetryable, apierr.CodeBridgeError)
	case status >= 300 && status < 400:
		return fail(OutcomeTerminal, apierr.CodeBridgeRejected)
	}
	return fail(OutcomeRetryable, apierr.CodeBridgeInvalidAnswer)
}

// MaxBridgeMessageChars bounds, in characters, the Bridge's own message
// that a tenant sees in a step's and a run's error: long enough for an
// exception's message, short enough to keep the run's row small.
const MaxBridgeMessageChars = 500

// thrown gives o, the outcome of a 500, the Bridge's own message when body
// is a well-formed Bridge error body; o keeps its fixed sentence otherwise.
func thrown(o Outcome, body []byte) Outcome {
	if msg, ok := bridgeMessage(body); ok {
		o.Message = msg
	}
	return o
}

// bridgeMessage returns the message of body when body is a well-formed
// Bridge error body, exactly {"error":{"message":"…"[,"code":"…"][,"stepId":"…"]}}
// (one JSON object, no other field, each a string, the message not
// empty), made fit to show: control characters dropped, invalid UTF-8
// replaced, cut to MaxBridgeMessageChars characters (the last one "…"
// when cut). ok is false for any other body (an HTML error page, a
// proxy's JSON, a message empty once cleaned): the tenant then sees only
// the status, never text of an arbitrary answer.
func bridgeMessage(body []byte) (msg string, ok bool) {
	var b struct {
		Error *struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
			StepID  *string `json:"stepId"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&b) != nil || b.Error == nil || b.Error.Message == nil {
		return "", false
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", false // trailing data after the object
	}
	msg = showable(*b.Error.Message)
	return msg, msg != ""
}

// showable cleans text that came from the network for a tenant's eyes:
// valid UTF-8, no control characters, no surrounding space, at most
// MaxBridgeMessageChars characters.
func showable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s))
	if utf8.RuneCountInString(s) <= MaxBridgeMessageChars {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxBridgeMessageChars-1 {
			return strings.TrimSpace(s[:i]) + "…"
		}
		n++
	}
	return s
}

// answered is the tenant's message for an answer of status: the status and
// a fixed reason, never text that came from the network.
func answered(status int) string {
	reason := strings.ToLower(http.StatusText(status))
	switch {
	case status == http.StatusUnauthorized:
		reason = "signature mismatch or clock skew"
	case status >= 300 && status < 400:
		reason = "redirects are not followed"
	case reason == "":
		reason = "unknown status"
	}
	return fmt.Sprintf("bridge answered %d: %s", status, reason)
}

func invalidAnswer(o Outcome, why string) Outcome {
	o.Kind, o.Code = OutcomeRetryable, apierr.CodeBridgeInvalidAnswer
	o.Message = fmt.Sprintf("invalid answer from the bridge (status %d)", o.HTTPStatus)
	o.Detail = clip("invalid answer from the bridge: " + why)
	return o
}

// unreachable is the outcome of a call that got no whole answer; status is 0
// when none at all came back.
func unreachable(status int, err error) Outcome {
	o := Outcome{Kind: OutcomeRetryable, HTTPStatus: status, Code: apierr.CodeBridgeUnreachable,
		Message: "bridge unreachable: no answer", Detail: clip(egress.LogText(err))}
	if status != 0 {
		o.Message = fmt.Sprintf("bridge unreachable: the answer (status %d) was cut off", status)
	}
	if egressRefused(err) {
		o.Kind, o.Code, o.Message = OutcomeTerminal, apierr.CodeEgressRefused, msgEgressRefused
	}
	return o
}

// msgEgressRefused is the tenant's message for a Bridge address the
// server's egress policy refuses.
const msgEgressRefused = "the bridge URL is refused by the server's egress policy: plain http, or an address that is loopback, private, link-local or otherwise internal"

// egressRefused reports whether err is a refusal of the destination by an
// egress policy: an error in its chain with a method EgressRefused() bool
// that returns true (as the server's egress package makes). Retrying it
// cannot help.
func egressRefused(err error) bool {
	var r interface{ EgressRefused() bool }
	return errors.As(err, &r) && r.EgressRefused()
}

// errorInfo reads an error body, if body is one.
func errorInfo(body []byte) (wire.ErrorInfo, bool) {
	var b wire.ErrorBody
	if json.Unmarshal(body, &b) != nil || (b.Error.Code == "" && b.Error.Message == "") {
		return wire.ErrorInfo{}, false
	}
	return b.Error, true
}

// clip bounds a message taken from the network to 1 KiB of valid UTF-8.
func clip(s string) string {
	const limit = 1024
	if len(s) > limit {
		s = s[:limit]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

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
