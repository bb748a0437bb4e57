package engine

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
