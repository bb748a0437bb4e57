package engine

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
