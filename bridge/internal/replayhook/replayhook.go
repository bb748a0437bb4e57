// Package replayhook lets package bridgetest replay a history through the
// SDK's own replay machinery, which package bridge keeps unexported.
package replayhook

import "github.com/heraldhq/herald/bridge/wire"

// Replay runs workflow (a *bridge.Workflow) against req as an execute call
// would, except that a step past the history ends the execution at once,
// neither run nor described: the answer then carries only its id and type.
// An error the workflow function returned outside any step comes back as
// returned. Package bridge sets Replay when it is initialised.
var Replay func(workflow any, req *wire.ExecuteRequest) (wire.ExecuteAnswer, error)
