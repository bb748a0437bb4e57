package engine

import (
	"fmt"

	"github.com/heraldhq/herald/apierr"
)

// Failure codes of runs and steps (the run's error.code).
const (
	CodeNoAddress           = "no_address"
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
	// errRunNotFound names the run; "" (an id not of the minted form,
	// not echoed back) says "no such run".
	errRunNotFound = func(runID string) error {
		msg := "no run " + runID
		if runID == "" {
			msg = "no such run"
		}
		return &apierr.Error{Kind: apierr.ErrNotFound, Code: "run_not_found", Message: msg}
	}
	errRunFinished = func(runID string) error {
		return &apierr.Error{Kind: apierr.ErrConflict, Code: "run_finished", Message: "run " + runID + " is finished"}
	}
	errTransactionMismatch = &apierr.Error{Kind: apierr.ErrConflict, Code: "transaction_mismatch",
		Message: "this transactionId was used with another request (workflow, target or payload)"}
	errTooManySignals = func(runID string) error {
		return &apierr.Error{Kind: apierr.ErrConflict, Code: "too_many_signals",
			Message: fmt.Sprintf("run %s already holds %d unconsumed signals", runID, MaxPendingSignals)}
	}
	errBridgeNotConfigured = &apierr.Error{Kind: apierr.ErrConflict, Code: CodeBridgeNotConfigured,
		Message: "no Bridge is registered: PUT /v1/bridge first"}
)
