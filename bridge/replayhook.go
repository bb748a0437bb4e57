package bridge

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/bridge/internal/replayhook"
	"github.com/heraldhq/herald/bridge/wire"
)

// replayHook is embedded in Workflow under this unexported name: it gives
// bridgetest, through package replayhook, the workflow's replay without a
// method in the SDK's exported API.
type replayHook = replayhook.Hook

// replay runs w against req for bridgetest (see replayhook.Func).
func (w *Workflow) replay(req *wire.ExecuteRequest) (wire.ExecuteAnswer, error) {
	c, fn, err := newContext(context.Background(), req, w)
	if err != nil {
		return wire.ExecuteAnswer{}, err
	}
	c.replayOnly = true
	answer, err := c.execute(fn)
	if we, ok := errors.AsType[*workflowError](err); ok {
		return answer, we.err
	}
	return answer, err
}
