package bridgeclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
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
	var info wire.ErrorInfo
	var hasInfo bool
	if status != http.StatusOK { // an answer's body is never an error's
		info, hasInfo = errorInfo(body)
	}
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
