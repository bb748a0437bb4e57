package bridge

import (
	"context"
	"errors"

	"github.com/heraldhq/herald/bridge/internal/replayhook"
	"github.com/heraldhq/herald/bridge/wire"
)

func init() {
	replayhook.Replay = func(workflow any, req *wire.ExecuteRequest) (wire.ExecuteAnswer, error) {
		c, fn, err := newContext(context.Background(), req, workflow.(*Workflow))
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
}
