// Package engine is Herald's durable engine, the runtime behind control's
// commands (it satisfies control.Runtime). It fans an accepted trigger out
// to one run per subscriber and drives each run step by step through the
// tenant's Bridge, recording every step result as an event and replaying
// it, never re-running a completed step.
//
// # Basics
//
// Work arrives on the WORK stream: work.run.<tenant>.<run> asks a worker to
// advance a run, work.fanout.<tenant>.<txn> to finish a fan-out. A worker
// folds the run's events (kept folded in memory, re-read from the log only
// when the run's subject moved on without it), asks Decide what is next,
// calls the Bridge or delivery, and appends the result with the run
// subject's last sequence expected: one writer wins, a loser re-reads.
// Delays, wait timeouts and retries are messages scheduled on the run's
// own schedule subject, so a run has at most one pending timer and no
// timer lives in memory.
//
// # Caveats
//
// Delivery of work is at least once: a worker that dies mid step leaves its
// message unacknowledged and the step runs again. A `run` step's callback
// may therefore run twice under failure; a `send` stays exactly once at
// the provider through the delivery idempotency key <runId>:<stepId>.
package engine
