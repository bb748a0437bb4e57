package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

// DefaultMaxBodyBytes is the request body limit of a [Serve] handler when
// [Options.MaxBodyBytes] is zero.
const DefaultMaxBodyBytes = 10 << 20

// Options configures [Serve]. Every zero value has a usable default, except
// that with no signing key at all every request is refused with 401.
type Options struct {
	// SigningKey is the signing secret exactly as PUT /v1/bridge returned it.
	SigningKey string
	// SigningKeys are further secrets accepted too, for the time a rotation
	// takes to reach every Bridge instance. Empty strings are ignored.
	SigningKeys []string
	// Tolerance is how far a request's timestamp may be from Now, in either
	// direction. Zero or negative: 300 s.
	Tolerance time.Duration
	// Now is the clock the timestamp is checked against. Nil: time.Now.
	Now func() time.Time
	// MaxBodyBytes caps the request body; a larger one is refused with 413
	// before the signature is checked. Zero or negative: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxReplayEntries bounds the signatures the handler remembers to refuse
	// a replayed request (same signature, inside the tolerance window) with
	// 409 replayed; the oldest are forgotten first. Zero:
	// DefaultMaxReplayEntries (about 8 MB when full). Negative: replays are
	// not checked (several handlers behind one URL share no memory: each
	// refuses the replays it sees).
	MaxReplayEntries int
}

// Serve returns the HTTP handler of a Bridge serving the workflows of reg.
// Mount it on one route; it accepts every method. For each request it reads
// the raw body, verifies its signature (see [wire.Verify]) before parsing
// anything, then answers the action:
//
//	200 {"status":"ok","workflows":N}                   health
//	200 {"workflows":[{"workflowId","schedule","payloadSchema"}]}  discover
//	200 {"status":"step","step":{…}}                     execute: the step it ran or describes
//	200 {"status":"completed"}                           execute: the workflow returned
//	200 {"status":"step","step":{"stepId","type"}}        check: the step past the history, not run
//	400 invalid_json, unknown_action, invalid_request    malformed or unknown request
//	401 unauthorized                                     signature missing, wrong or stale
//	409 replayed                                         a signature already accepted (a replay)
//	404 workflow_not_found                               unknown workflowId
//	413 body_too_large                                   body over MaxBodyBytes
//	422 nondeterministic, duplicate_step_id              the code departs from the run's history
//	500 step_failed (with stepId), workflow_failed       a callback or the workflow failed: retried
//	500 invalid_step (with stepId)                       a step called with invalid arguments: the run fails
//
// Error bodies are {"error":{"code","message"[,"stepId"]}}. reg must not be
// nil. The handler is safe for concurrent use; each execute runs the workflow
// function on the request's goroutine.
func Serve(reg *Registry, opts Options) http.Handler {
	h := &handler{reg: reg, tolerance: opts.Tolerance, now: opts.Now, maxBody: opts.MaxBodyBytes}
	h.keys = append([]string{opts.SigningKey}, opts.SigningKeys...)
	if h.now == nil {
		h.now = time.Now
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	switch {
	case opts.MaxReplayEntries == 0:
		h.replays = newReplays(DefaultMaxReplayEntries)
	case opts.MaxReplayEntries > 0:
		h.replays = newReplays(opts.MaxReplayEntries)
	}
	return h
}

type handler struct {
	reg       *Registry
	keys      []string
	tolerance time.Duration
	now       func() time.Time
	maxBody   int64
	replays   *replays // nil: not checked
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	answer, err := h.answer(w, r)
	if err != nil {
		status, info := classify(err)
		writeJSON(w, status, wire.ErrorBody{Error: info})
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

// answer authenticates and decodes the request and returns the 200 answer
// to it, or the error that classify turns into another status.
func (h *handler) answer(w http.ResponseWriter, r *http.Request) (any, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, fmt.Errorf("%w: over %d bytes", errBodyTooLarge, h.maxBody)
		}
		return nil, fmt.Errorf("%w: reading the body: %v", errInvalidRequest, err)
	}
	signature := r.Header.Get(wire.HeaderSignature)
	err = wire.Verify(body, r.Header.Get(wire.HeaderTimestamp), signature, h.now(), h.tolerance, h.keys...)
	if err != nil {
		return nil, err
	}
	if h.replays != nil && !h.replays.first(signature) {
		return nil, errReplayed
	}
	var req wire.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidJSON, err)
	}
	switch req.Action {
	case wire.ActionHealth:
		return wire.HealthAnswer{Status: wire.StatusOK, Workflows: len(h.reg.infos())}, nil
	case wire.ActionDiscover:
		return wire.DiscoverAnswer{Workflows: h.reg.infos()}, nil
	case wire.ActionExecute, wire.ActionCheck, wire.ActionPreview:
		if req.ExecuteRequest == nil {
			req.ExecuteRequest = &wire.ExecuteRequest{}
		}
		if req.Action == wire.ActionPreview && req.StepID == "" {
			return nil, fmt.Errorf("%w: a preview names no stepId", errInvalidRequest)
		}
		wf, ok := h.reg.lookup(req.WorkflowID)
		if !ok {
			return nil, fmt.Errorf("%w: %q", errWorkflowNotFound, req.WorkflowID)
		}
		c, fn, err := newContext(r.Context(), req.ExecuteRequest, wf)
		if err != nil {
			return nil, err
		}
		if req.Action == wire.ActionCheck {
			return c.check(fn)
		}
		if req.Action == wire.ActionPreview {
			c.previewStep = req.StepID
		}
		return c.execute(fn)
	case "":
		return nil, fmt.Errorf("%w: no action", errUnknownAction)
	}
	return nil, fmt.Errorf("%w: %q", errUnknownAction, req.Action)
}

// statusOf maps the sentinel errors of a request to their answer.
var statusOf = []struct {
	err    error
	status int
	code   string
}{
	{wire.ErrNotSigned, http.StatusUnauthorized, "unauthorized"},
	{wire.ErrInvalidHeader, http.StatusUnauthorized, "unauthorized"},
	{wire.ErrNoValidSignature, http.StatusUnauthorized, "unauthorized"},
	{wire.ErrStale, http.StatusUnauthorized, "unauthorized"},
	{errReplayed, http.StatusConflict, wire.CodeReplayed},
	{errBodyTooLarge, http.StatusRequestEntityTooLarge, "body_too_large"},
	{errInvalidJSON, http.StatusBadRequest, "invalid_json"},
	{errUnknownAction, http.StatusBadRequest, "unknown_action"},
	{errInvalidRequest, http.StatusBadRequest, "invalid_request"},
	{errWorkflowNotFound, http.StatusNotFound, "workflow_not_found"},
	{ErrNondeterministic, http.StatusUnprocessableEntity, wire.CodeNondeterministic},
	{ErrDuplicateStepID, http.StatusUnprocessableEntity, wire.CodeDuplicateStepID},
}

// classify turns the error of a request into its status and error body.
func classify(err error) (int, wire.ErrorInfo) {
	if se, ok := errors.AsType[*StepError](err); ok {
		code := "step_failed"
		if errors.Is(se.Err, ErrInvalidStep) {
			code = wire.CodeInvalidStep
		}
		return http.StatusInternalServerError, wire.ErrorInfo{Code: code, Message: se.Err.Error(), StepID: se.StepID}
	}
	if we, ok := errors.AsType[*workflowError](err); ok {
		return http.StatusInternalServerError, wire.ErrorInfo{Code: "workflow_failed", Message: we.Error()}
	}
	for _, s := range statusOf {
		if errors.Is(err, s.err) {
			return s.status, wire.ErrorInfo{Code: s.code, Message: err.Error()}
		}
	}
	return http.StatusInternalServerError, wire.ErrorInfo{Code: "internal", Message: err.Error()}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := wire.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"the answer does not encode as JSON"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
