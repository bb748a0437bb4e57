// Package service assembles one `herald serve` process: the embedded (or
// external) NATS connection, the event log, the projections and their
// projector, the control plane, the engine and the REST API. It starts
// them in order, reports readiness, and stops them in reverse order.
//
// cmd/herald uses it for `herald serve`; end-to-end tests use it to run
// the whole service in-process on a temporary data directory.
package service
