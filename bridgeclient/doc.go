// Package bridgeclient is the service's side of the Bridge protocol: a
// [Client] that makes the signed health, discover and execute calls to a
// tenant's Bridge, and the classification of every execute answer as an
// [Outcome] (completed, a step, retryable, or terminal with a run error
// code), with the bounds an answer must keep ([MaxIDChars]…).
//
// The wire shapes come from package bridge/wire, shared with the tenant SDK.
// The engine drives the Client; nothing here knows about runs, events or
// retries beyond the verdict on one answer.
package bridgeclient
