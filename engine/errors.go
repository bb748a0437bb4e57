package engine

import (
	"fmt"

	"github.com/heraldhq/herald/control"
)

// Failure codes of runs and steps (the run's error.code).
const (
	CodeNoChannel           = "no_channel"
	CodeNoAddress           = "no_address"
	CodeProviderRejected    = "provider_rejected"
	CodeAttemptsExhausted   = "attempts_exhausted"
	CodeBridgeNotConfigured = "bridge_not_configured"
	CodeUnsupportedStep     = "unsupported_step"
	// CodeInfrastructureExhausted: the service failed to advance the run
	// MaxWorkFailures times in a row on an internal error and gave up.
	CodeInfrastructureExhausted = "infrastructure_exhausted"
)

// Errors of the engine's commands. They are control errors, so the API
// maps them like every other command's.
var (
	errRunNotFound = func(runID string) error {
		return &control.Error{Kind: control.ErrNotFound, Code: "run_not_found", Message: "no run " + runID}
	}
	errRunFinished = func(runID string) error {
		return &control.Error{Kind: control.ErrConflict, Code: "run_finished", Message: "run " + runID + " is finished"}
	}
	errTooManySignals = func(runID string) error {
		return &control.Error{Kind: control.ErrConflict, Code: "too_many_signals",
			Message: fmt.Sprintf("run %s already holds %d unconsumed signals", runID, MaxPendingSignals)}
	}
	errBridgeNotConfigured = &control.Error{Kind: control.ErrConflict, Code: CodeBridgeNotConfigured,
		Message: "no Bridge is registered: PUT /v1/bridge first"}
)
