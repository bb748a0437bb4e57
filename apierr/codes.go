package apierr

import "net/http"

// Codes of failures: every error code Herald answers in an error body,
// records in a run's or a step's error, or in a delivery attempt's error.
// Each is declared here and nowhere else; table gives each its one HTTP
// status.
const (
	// The conventions of the REST API.
	CodeInvalidJSON         = "invalid_json"         // malformed JSON, trailing data
	CodeBodyTooLarge        = "body_too_large"       // a body over 1 MiB
	CodeNotFound            = "not_found"            // an unknown route or resource
	CodeMethodNotAllowed    = "method_not_allowed"   // a known route, another method
	CodeValidationFailed    = "validation_failed"    // fields at fault, named in details
	CodeBadRequest          = "bad_request"          // a command malformed as a whole
	CodeUnauthorized        = "unauthorized"         // credentials missing, unknown or revoked
	CodeConflict            = "conflict"             // a state that forbids the command
	CodeInvalidID           = "invalid_id"           // an id no subject may hold
	CodeRateLimited         = "rate_limited"         // over the tenant's request rate
	CodeTooManyStreams      = "too_many_streams"     // no inbox stream slot left
	CodeBusy                = "busy"                 // contention or a deadline: repeat it
	CodeNotReady            = "not_ready"            // GET /readyz before the service is ready
	CodeNotLive             = "not_live"             // GET /healthz of a stopping service
	CodeUpstreamUnavailable = "upstream_unavailable" // a system the command needs failed
	CodeInternal            = "internal"             // unexpected; says nothing of the cause

	// Resources of a tenant that do not exist.
	CodeTenantNotFound       = "tenant_not_found"
	CodeSubscriberNotFound   = "subscriber_not_found"
	CodeTopicNotFound        = "topic_not_found"
	CodeSubscriptionNotFound = "subscription_not_found"
	CodeChannelNotFound      = "channel_not_found"
	CodeUnknownChannel       = "unknown_channel" // a channelKey outside the catalog
	CodeRunNotFound          = "run_not_found"
	CodeTransactionNotFound  = "transaction_not_found"
	CodeMessageNotFound      = "message_not_found"
	CodeWebhookNotFound      = "webhook_not_found"
	CodeSuppressionNotFound  = "suppression_not_found"

	// Commands the tenant's state refuses.
	CodeEmptyPatch          = "empty_patch"
	CodeTopicHasSubscribers = "topic_has_subscribers"
	CodeRunFinished         = "run_finished"
	CodeRunNotFailed        = "run_not_failed" // a rerun of a run that did not fail
	CodeTooManySignals      = "too_many_signals"
	CodeTransactionMismatch = "transaction_mismatch"
	CodeWebhookLimit        = "webhook_limit"
	// CodeBridgeNotConfigured: a command that calls the Bridge (a trigger,
	// a sync) before the tenant registered one. Reading the binding itself
	// (GET /v1/bridge) answers it as a missing resource: see [Missing].
	CodeBridgeNotConfigured = "bridge_not_configured"

	// A sync refused for what the Bridge reported.
	CodeBridgeUnreachable   = "bridge_unreachable"
	CodeBridgeRejected      = "bridge_rejected"
	CodeInvalidWorkflowID   = "invalid_workflow_id"
	CodeInvalidSchedule     = "invalid_schedule"
	CodeTooManyWorkflows    = "too_many_workflows"
	CodeTooManySchedules    = "too_many_schedules"
	CodeScheduleTooFrequent = "schedule_too_frequent"
	CodeInvalidPreferences  = "invalid_preferences"

	// CodeInvalidPayloadSchema: a sync refused for a workflow's
	// payloadSchema herald cannot enforce. CodeInvalidPayload: a trigger
	// whose payload the workflow's payloadSchema refuses.
	CodeInvalidPayloadSchema = "invalid_payload_schema"
	CodeInvalidPayload       = "invalid_payload"

	// CodeInvalidControls: values of a step's controls that its schema
	// refuses. CodePreviewNeedsSample: a preview that reaches a `run`
	// step with neither a recorded output nor a declared sample.
	// CodeInvalidLayout: a layout without exactly one {{content}}, or
	// too large.
	CodeInvalidControls    = "invalid_controls"
	CodePreviewNeedsSample = "preview_needs_sample"
	CodeInvalidLayout      = "invalid_layout"
	CodeLayoutNotFound     = "layout_not_found"

	// A send (POST /v1/deliver, a send step, a delivery attempt).
	CodeNoChannel           = "no_channel"           // no enabled channel of the kind
	CodeNoAddress           = "no_address"           // no recipient at all (a skip reason too)
	CodeInvalidContent      = "invalid_content"      // not the content of its kind
	CodeProviderRejected    = "provider_rejected"    // refused for good, no failover
	CodeProviderUnavailable = "provider_unavailable" // no channel took it; retried
	CodeDeliveryInProgress  = "delivery_in_progress" // an attempt of the key is in flight
	CodeDeliveryFailed      = "delivery_failed"      // a failure no other code names
	CodeDeliveryUnreachable = "delivery_unreachable" // the /v1/deliver client got no answer
	// CodeDeliveryInvalidAnswer: /v1/deliver answered 200 with a body that
	// is not a result.
	CodeDeliveryInvalidAnswer = "delivery_invalid_answer"
	// CodeLeaseExpired: an attempt that recorded no outcome within its
	// lease, or before its process stopped, replaced by a new attempt.
	CodeLeaseExpired = "lease_expired"

	// A run's or a step's error from the Bridge's answer.
	CodeBridgeUnauthorized  = "bridge_unauthorized"   // 401: the signature was refused
	CodeWorkflowNotFound    = "workflow_not_found"    // 404; explain answers it too
	CodeNondeterministic    = "nondeterministic"      // 422: the replay diverged
	CodeDuplicateStepID     = "duplicate_step_id"     // 422
	CodeBridgeBadRequest    = "bridge_bad_request"    // 400
	CodeInvalidStep         = "invalid_step"          // an answer over a bound, a step value no retry mends
	CodeEgressRefused       = "egress_refused"        // the address is refused by the egress policy
	CodeStepFailed          = "step_failed"           // 500 naming the failed step
	CodeBridgeError         = "bridge_error"          // another 5xx, 408, 425, 429, a replay
	CodeBridgeInvalidAnswer = "bridge_invalid_answer" // a 200 that is not an answer, a 1xx

	// A run's or a step's error of the engine.
	CodeAttemptsExhausted = "attempts_exhausted"
	CodeUnsupportedStep   = "unsupported_step"
	// CodeInfrastructureExhausted: the service failed to advance the run
	// on internal errors too many times in a row and gave up.
	CodeInfrastructureExhausted = "infrastructure_exhausted"
	CodeCancelled               = "cancelled"
)

// Recorded is the status of a code the API never answers: it is only
// recorded, in a run's or a step's error or a delivery attempt's.
const Recorded = 0

// table gives every code its one status: the status of an error body
// carrying it, or Recorded.
var table = map[string]int{
	CodeInvalidJSON:         http.StatusBadRequest,
	CodeBodyTooLarge:        http.StatusRequestEntityTooLarge,
	CodeNotFound:            http.StatusNotFound,
	CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	CodeValidationFailed:    http.StatusUnprocessableEntity,
	CodeBadRequest:          http.StatusBadRequest,
	CodeUnauthorized:        http.StatusUnauthorized,
	CodeConflict:            http.StatusConflict,
	CodeInvalidID:           http.StatusUnprocessableEntity,
	CodeRateLimited:         http.StatusTooManyRequests,
	CodeTooManyStreams:      http.StatusTooManyRequests,
	CodeBusy:                http.StatusServiceUnavailable,
	CodeNotReady:            http.StatusServiceUnavailable,
	CodeNotLive:             http.StatusServiceUnavailable,
	CodeUpstreamUnavailable: http.StatusBadGateway,
	CodeInternal:            http.StatusInternalServerError,

	CodeTenantNotFound:       http.StatusNotFound,
	CodeSubscriberNotFound:   http.StatusNotFound,
	CodeTopicNotFound:        http.StatusNotFound,
	CodeSubscriptionNotFound: http.StatusNotFound,
	CodeChannelNotFound:      http.StatusNotFound,
	CodeUnknownChannel:       http.StatusNotFound,
	CodeRunNotFound:          http.StatusNotFound,
	CodeTransactionNotFound:  http.StatusNotFound,
	CodeMessageNotFound:      http.StatusNotFound,
	CodeWebhookNotFound:      http.StatusNotFound,
	CodeSuppressionNotFound:  http.StatusNotFound,

	CodeEmptyPatch:          http.StatusBadRequest,
	CodeTopicHasSubscribers: http.StatusConflict,
	CodeRunFinished:         http.StatusConflict,
	CodeRunNotFailed:        http.StatusConflict,
	CodeTooManySignals:      http.StatusConflict,
	CodeTransactionMismatch: http.StatusConflict,
	CodeWebhookLimit:        http.StatusConflict,
	CodeBridgeNotConfigured: http.StatusConflict,

	CodeBridgeUnreachable:   http.StatusBadGateway,
	CodeBridgeRejected:      http.StatusBadGateway,
	CodeInvalidWorkflowID:   http.StatusUnprocessableEntity,
	CodeInvalidSchedule:     http.StatusUnprocessableEntity,
	CodeTooManyWorkflows:    http.StatusUnprocessableEntity,
	CodeTooManySchedules:    http.StatusUnprocessableEntity,
	CodeScheduleTooFrequent: http.StatusUnprocessableEntity,
	CodeInvalidPreferences:  http.StatusUnprocessableEntity,

	CodeInvalidPayloadSchema: http.StatusUnprocessableEntity,
	CodeInvalidPayload:       http.StatusUnprocessableEntity,
	CodeInvalidControls:      http.StatusUnprocessableEntity,
	CodePreviewNeedsSample:   http.StatusUnprocessableEntity,
	CodeInvalidLayout:        http.StatusUnprocessableEntity,
	CodeLayoutNotFound:       http.StatusNotFound,

	CodeNoChannel:             http.StatusUnprocessableEntity,
	CodeNoAddress:             http.StatusUnprocessableEntity,
	CodeInvalidContent:        http.StatusUnprocessableEntity,
	CodeProviderRejected:      http.StatusUnprocessableEntity,
	CodeProviderUnavailable:   http.StatusBadGateway,
	CodeDeliveryInProgress:    http.StatusConflict,
	CodeDeliveryFailed:        Recorded,
	CodeDeliveryUnreachable:   Recorded,
	CodeDeliveryInvalidAnswer: Recorded,
	CodeLeaseExpired:          Recorded,

	CodeBridgeUnauthorized:  Recorded,
	CodeWorkflowNotFound:    http.StatusNotFound,
	CodeNondeterministic:    Recorded,
	CodeDuplicateStepID:     Recorded,
	CodeBridgeBadRequest:    Recorded,
	CodeInvalidStep:         Recorded,
	CodeEgressRefused:       Recorded,
	CodeStepFailed:          Recorded,
	CodeBridgeError:         Recorded,
	CodeBridgeInvalidAnswer: Recorded,

	CodeAttemptsExhausted:       Recorded,
	CodeUnsupportedStep:         Recorded,
	CodeInfrastructureExhausted: Recorded,
	CodeCancelled:               Recorded,
}

// Status returns the HTTP status an error body with code answers, or
// Recorded for a code the API never answers and for an unknown one.
func Status(code string) int { return table[code] }

// kindOf returns the kind of a status, nil for a status no kind has (the
// HTTP layer's own: 405, 413, 429, 500).
func kindOf(status int) error {
	switch status {
	case http.StatusBadRequest:
		return ErrBadRequest
	case http.StatusUnauthorized:
		return ErrUnauthenticated
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusUnprocessableEntity:
		return ErrInvalid
	case http.StatusBadGateway:
		return ErrUnavailable
	case http.StatusServiceUnavailable:
		return ErrBusy
	}
	return nil
}
