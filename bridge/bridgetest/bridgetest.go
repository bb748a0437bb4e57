// Package bridgetest replays a workflow against a recorded history in the
// tenant's own unit tests, and reports where the code no longer follows it,
// as Temporal's replayer does. It catches, before a deploy, the changes that
// would fail runs in flight as nondeterministic: a step reordered, renamed,
// removed, retyped, or whose recorded output no longer decodes.
//
// A history is what the Bridge receives on the wire: the JSON body of one
// execute request, with the run's payload, subscriber and completed steps.
// Save one from a real run by keeping the body of a request your Bridge
// received (a middleware in front of bridge.Serve can write the bodies whose
// action is "execute" to files), or write one by hand; keep them under
// testdata:
//
//	func TestWelcomeReplays(t *testing.T) {
//		h, err := bridgetest.LoadHistory("testdata/welcome.json")
//		if err != nil {
//			t.Fatal(err)
//		}
//		if _, err := bridgetest.Replay(welcome, h); err != nil {
//			t.Fatal(err) // nondeterministic workflow: step 2 was "send-email" (send) in the history, …
//		}
//	}
//
// Replay runs no step past the history: no Run callback, no Send render. It
// stops at the first step the history does not hold and reports it.
package bridgetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/internal/replayhook"
	"github.com/heraldhq/herald/bridge/wire"
)

// History is a run as its Bridge saw it: the fields of an execute request
// (workflowId, runId, payload, subscriber, and the completed steps, oldest
// first).
type History = wire.ExecuteRequest

// LoadHistory reads a history from a file holding the JSON body of an
// execute request (see [ParseHistory]).
func LoadHistory(path string) (*History, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h, err := ParseHistory(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// ParseHistory reads a history from the JSON body of an execute request,
// {"action":"execute","workflowId":…,"steps":[…]}. The action may be left
// out; any other action than execute is an error.
func ParseHistory(data []byte) (*History, error) {
	var req wire.Request
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("bridgetest: not an execute request: %w", err)
	}
	if req.Action != "" && req.Action != wire.ActionExecute {
		return nil, fmt.Errorf("bridgetest: a %q request, not an execute request", req.Action)
	}
	if req.ExecuteRequest == nil {
		return nil, fmt.Errorf("bridgetest: an execute request without a workflowId")
	}
	return req.ExecuteRequest, nil
}

// Result is where a replay that followed the whole history ended.
type Result struct {
	// Completed: the workflow function returned after the last recorded
	// step.
	Completed bool
	// NextStepID and NextStepType name the step the code asks for after the
	// history (not run, not described); empty when Completed.
	NextStepID   string
	NextStepType string
}

// Replay runs workflow w against history h, as the Bridge would when the
// service calls it for that run, and reports whether the code follows the
// history. The error is nil when it does; otherwise it is the failure the
// Bridge would answer: an error wrapping [bridge.ErrNondeterministic] whose
// message names the step position and both sides, for example
//
//	nondeterministic workflow: step 2 was "send-email" (send) in the history, the code asked for "load-user" (run)
//
// or [bridge.ErrDuplicateStepID], a [*bridge.StepError] for a step called
// with invalid arguments, a malformed history or a payload that does not
// decode, or the error the workflow function returned outside any step.
// h.WorkflowID, when set, must be w's id.
func Replay(w *bridge.Workflow, h *History) (Result, error) {
	if w == nil || h == nil {
		return Result{}, fmt.Errorf("bridgetest: nil workflow or history")
	}
	if h.WorkflowID != "" && h.WorkflowID != w.ID() {
		return Result{}, fmt.Errorf("bridgetest: a history of workflow %q replayed with workflow %q", h.WorkflowID, w.ID())
	}
	answer, err := replayhook.Replay(w, h)
	if errors.Is(err, replayhook.ErrNoReplay) {
		return Result{}, fmt.Errorf("bridgetest: %w", err)
	}
	if err != nil {
		return Result{}, err
	}
	if answer.Step == nil {
		return Result{Completed: true}, nil
	}
	return Result{NextStepID: answer.Step.StepID, NextStepType: string(answer.Step.Type)}, nil
}
