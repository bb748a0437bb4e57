package engine

import "github.com/heraldhq/herald/control"

// Failure codes of runs and steps (the run's error.code).
const (
	CodeNoChannel           = "no_channel"
	CodeNoAddress           = "no_address"
	CodeProviderRejected    = "provider_rejected"
	CodeAttemptsExhausted   = "attempts_exhausted"
	CodeBridgeNotConfigured = "bridge_not_configured"
	CodeUnsupportedStep     = "unsupported_step"
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
		return &control.Error{Kind: control.ErrNotFound, Code: "run_not_found", Message: msg}
	}
	errRunFinished = func(runID string) error {
		return &control.Error{Kind: control.ErrConflict, Code: "run_finished", Message: "run " + runID + " is finished"}
	}
	errTransactionMismatch = &control.Error{Kind: control.ErrConflict, Code: "transaction_mismatch",
		Message: "this transactionId was used with another request (workflow, target or payload)"}
	errBridgeNotConfigured = &control.Error{Kind: control.ErrConflict, Code: CodeBridgeNotConfigured,
		Message: "no Bridge is registered: PUT /v1/bridge first"}
)
