// Package wire holds the Bridge wire protocol, shared by the tenant SDK
// (package bridge) and the service's client: the JSON shapes of the
// requests and answers, the durations they carry, and the request
// signature ([Sign], [Verify] and their headers). It imports nothing but
// the standard library.
//
// Every request is a POST of a [Request] whose action selects health,
// discover or execute; a Bridge answers 200 with a [HealthAnswer], a
// [DiscoverAnswer] or an [ExecuteAnswer], or another status with an
// [ErrorBody]. An execute request lists the run's completed steps, oldest
// first ([CompletedStep], the run's history); the answer is the next [Step]
// or completion. docs/bridge-protocol.md describes the protocol in full.
package wire
