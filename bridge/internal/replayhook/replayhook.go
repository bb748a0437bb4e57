// Package replayhook is the road from package bridgetest to the replay
// machinery of package bridge, which bridge keeps unexported.
//
// A bridge.Workflow embeds a Hook under an unexported name, so it has the
// unexported method that [Workflow] asks for: only packages that can import
// this one (bridge/...) reach a workflow's replay through it, and the SDK's
// exported API shows none of it.
package replayhook

import (
	"errors"

	"github.com/heraldhq/herald/bridge/wire"
)

// Func runs a workflow against req as an execute call would, except that a
// step past the history ends the execution at once, neither run nor
// described: the answer then carries only its id and type. An error the
// workflow function returned outside any step comes back as returned.
type Func func(req *wire.ExecuteRequest) (wire.ExecuteAnswer, error)

// Hook carries a workflow's replay. Its zero value has none.
type Hook struct{ replay Func }

// New returns the hook of a workflow whose replay is replay.
func New(replay Func) Hook { return Hook{replay: replay} }

func (h Hook) hook() Hook { return h }

// Workflow is what embeds a Hook: a *bridge.Workflow.
type Workflow interface{ hook() Hook }

// ErrNoReplay is the error of a workflow not built by bridge.NewWorkflow
// (a zero bridge.Workflow), which has nothing to replay.
var ErrNoReplay = errors.New("not a workflow built by bridge.NewWorkflow")

// Replay replays w against req (see [Func]).
func Replay(w Workflow, req *wire.ExecuteRequest) (wire.ExecuteAnswer, error) {
	replay := w.hook().replay
	if replay == nil {
		return wire.ExecuteAnswer{}, ErrNoReplay
	}
	return replay(req)
}
