package events

// Events of flow control and recovery: a failed run resumed, a whole
// transaction cancelled.
const (
	// RunRerun, on the run's subject, resumes a failed run at its failed
	// step: the step is tried again with its attempts counted afresh; the
	// completed steps stay as recorded and are replayed, never called
	// again. The RunFailed before it stays on record.
	RunRerun = "RunRerun"
	// TransactionCancelled, on the transaction's subject, cancels every
	// run of the transaction that is not finished, and every run its
	// fan-out starts after it: those start cancelled and never take a turn.
	// A transaction is cancelled at most once: a repeated cancel finds it.
	TransactionCancelled = "TransactionCancelled"
)

// RunRerunData is a rerun of a failed run: who asked, and the failure it
// resumes from (the run's error until then), so that the run's history
// reads on its own.
type RunRerunData struct {
	// StepID is the failed step the run resumes at; empty when the run
	// failed before the Bridge named a step.
	StepID string `json:"stepId,omitempty"`
	// Code and Message are the failure the rerun resumes from.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Actor is the prefix of the API key that asked ("hk_…", never the
	// key).
	Actor string `json:"actor,omitempty"`
}

// TransactionCancelledData is a transaction's cancellation.
type TransactionCancelledData struct {
	TransactionID string `json:"transactionId"`
	// Actor is the prefix of the API key that asked ("hk_…", never the
	// key).
	Actor string `json:"actor,omitempty"`
}

// LogPurged marks a purge of the log (retention): appended before the
// purged subjects go, on the one subject of the log's own events
// (eventlog.LogSubject), where only the latest is kept. The stream's last
// event is then never one that a purge removed, so a process that waits to
// have applied the log's last event always sees it arrive.
const LogPurged = "LogPurged"

// LogPurgedData is a purge: how many subjects it removes whole, and how
// many events besides.
type LogPurgedData struct {
	Subjects int `json:"subjects"`
	Events   int `json:"events,omitempty"`
}
