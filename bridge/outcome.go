package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"
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
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Codes of an [Outcome] (and, for the shared ones, of a Bridge's error body).
const (
	// Terminal.
	CodeBridgeUnauthorized = "bridge_unauthorized" // 401
	CodeWorkflowNotFound   = "workflow_not_found"  // 404
	CodeNondeterministic   = "nondeterministic"    // 422
	CodeDuplicateStepID    = "duplicate_step_id"   // 422
	CodeBridgeBadRequest   = "bridge_bad_request"  // 400
	CodeBridgeRejected     = "bridge_rejected"     // any other 4xx; a 422 without a usable code; a 3xx
	CodeEgressRefused      = "egress_refused"      // the address is refused by the server's egress policy
	// Retryable.
	CodeStepFailed        = "step_failed"           // 500 naming the failed step
	CodeBridgeError       = "bridge_error"          // another 5xx, 408, 425, 429, 409 replayed
	CodeBridgeUnreachable = "bridge_unreachable"    // no answer: network error, timeout
	CodeInvalidAnswer     = "bridge_invalid_answer" // a 200 that is not a valid answer; 1xx
	// The error code of a Bridge's 409: a replayed request.
	CodeReplayed = "replayed"
)

// Outcome classifies the answer to an execute call.
//
//	200 {"status":"completed"}           Completed
//	200 {"status":"step","step":{…}}     Step (Step set, already validated)
//	200 anything else                    Retryable  bridge_invalid_answer
//	401                                  Terminal   bridge_unauthorized
//	404                                  Terminal   workflow_not_found
//	422                                  Terminal   the body's code (nondeterministic, duplicate_step_id…)
//	400                                  Terminal   bridge_bad_request
//	408, 425, 429, 409 replayed          Retryable  bridge_error
//	other 4xx                            Terminal   bridge_rejected
//	3xx (redirects are not followed)     Terminal   bridge_rejected
//	500 with a stepId                    Retryable  step_failed (StepID set)
//	other 5xx                            Retryable  bridge_error
//	no answer (network, timeout)         Retryable  bridge_unreachable (HTTPStatus 0)
//	address refused by an egress policy  Terminal   egress_refused (HTTPStatus 0)
//
// Code, Message and Detail are empty for Completed and Step. Message is
// safe to show the tenant: a fixed sentence naming the status at most,
// never text that came from the network (the URL may reach a service that
// is not the tenant's, whose answer must not leak). Detail adds what the
// answer or the failure said, clipped to 1 KiB, for the operator's log.
type Outcome struct {
	Kind       OutcomeKind
	Step       *Step
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
		o.Message = strings.TrimSpace(fmt.Sprintf("bridge answered %d %s", status, http.StatusText(status)))
		o.Detail = o.Message
		if hasInfo && info.Message != "" {
			o.Detail = clip(info.Message)
		}
		return o
	}
	switch {
	case status == http.StatusOK:
		var a ExecuteAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return invalidAnswer(o, fmt.Sprintf("not an execute answer: %v", err))
		}
		switch a.Status {
		case StatusCompleted:
			o.Kind = OutcomeCompleted
			return o
		case StatusStep:
			if a.Step == nil {
				return invalidAnswer(o, `status "step" without a step`)
			}
			if err := a.Step.check(); err != nil {
				return invalidAnswer(o, err.Error())
			}
			o.Kind, o.Step = OutcomeStep, a.Step
			return o
		}
		return invalidAnswer(o, fmt.Sprintf("unknown status %q", a.Status))
	case status == http.StatusUnauthorized:
		return fail(OutcomeTerminal, CodeBridgeUnauthorized)
	case status == http.StatusNotFound:
		return fail(OutcomeTerminal, CodeWorkflowNotFound)
	case status == http.StatusUnprocessableEntity:
		if hasInfo && codePattern.MatchString(info.Code) {
			return fail(OutcomeTerminal, info.Code)
		}
		return fail(OutcomeTerminal, CodeBridgeRejected)
	case status == http.StatusBadRequest:
		return fail(OutcomeTerminal, CodeBridgeBadRequest)
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return fail(OutcomeRetryable, CodeBridgeError)
	case status == http.StatusConflict && hasInfo && info.Code == CodeReplayed:
		// Another process sent the same bytes in the same second: the
		// next attempt is signed afresh.
		return fail(OutcomeRetryable, CodeBridgeError)
	case status >= 400 && status < 500:
		return fail(OutcomeTerminal, CodeBridgeRejected)
	case status == http.StatusInternalServerError && hasInfo && info.StepID != "":
		o.StepID = info.StepID
		return fail(OutcomeRetryable, CodeStepFailed)
	case status >= 500 && status < 600:
		return fail(OutcomeRetryable, CodeBridgeError)
	case status >= 300 && status < 400:
		o = fail(OutcomeTerminal, CodeBridgeRejected)
		o.Message += " (redirects are not followed)"
		return o
	}
	return fail(OutcomeRetryable, CodeInvalidAnswer)
}

func invalidAnswer(o Outcome, why string) Outcome {
	o.Kind, o.Code = OutcomeRetryable, CodeInvalidAnswer
	o.Message = fmt.Sprintf("invalid answer from the bridge (status %d)", o.HTTPStatus)
	o.Detail = clip("invalid answer from the bridge: " + why)
	return o
}

// unreachable is the outcome of a call that got no whole answer; status is 0
// when none at all came back.
func unreachable(status int, err error) Outcome {
	o := Outcome{Kind: OutcomeRetryable, HTTPStatus: status, Code: CodeBridgeUnreachable,
		Message: "bridge unreachable: no answer", Detail: clip(err.Error())}
	if status != 0 {
		o.Message = fmt.Sprintf("bridge unreachable: the answer (status %d) was cut off", status)
	}
	if egressRefused(err) {
		o.Kind, o.Code, o.Message = OutcomeTerminal, CodeEgressRefused, msgEgressRefused
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
func errorInfo(body []byte) (ErrorInfo, bool) {
	var b ErrorBody
	if json.Unmarshal(body, &b) != nil || (b.Error.Code == "" && b.Error.Message == "") {
		return ErrorInfo{}, false
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

// check validates a step answered by a Bridge: what the engine needs of
// each type is there and well-formed.
func (s *Step) check() error {
	var problem string
	switch s.Type {
	case StepRun:
		if len(s.Output) == 0 {
			s.Output = json.RawMessage("null")
		}
	case StepSend:
		switch {
		case s.Channel == "":
			problem = "no channel"
		case s.Content == nil:
			problem = "no content"
		case s.To != nil && *s.To == "":
			problem = "an empty to"
		}
	case StepDelay:
		switch {
		case (s.Seconds == nil) == (s.Until == nil):
			problem = "not exactly one of seconds and until"
		case s.Seconds != nil && (*s.Seconds < 0 || *s.Seconds > maxSeconds):
			problem = "seconds out of range"
		}
	case StepWaitForEvent:
		if s.Event == "" {
			problem = "no event"
		}
	case StepDigest:
		if s.Window == nil || s.Window.Duration() <= 0 {
			problem = "no positive window"
		}
	default:
		return fmt.Errorf("step %q has an unknown type %q", s.StepID, s.Type)
	}
	switch {
	case s.StepID == "":
		return errors.New("a step without a stepId")
	case problem != "":
		return fmt.Errorf("%s step %q has %s", s.Type, s.StepID, problem)
	}
	return nil
}
