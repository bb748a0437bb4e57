// Package control handles the commands of the REST API: it validates a
// command against projections caught up to the aggregate's last event,
// turns it into events, appends them with that sequence expected, and
// waits until the local projections applied them, so the caller's next
// read sees its write.
//
// Every command goes through it, those of runs included: Trigger, Signal,
// Cancel and Sync validate and append here, and ask the engine (through
// the small Runtime interface it is built with) only for what
// executes runs: the fan-out of an accepted trigger, the Bridge's
// discover answer, the arming of cron schedules, a run's next turn.
// Commands and results are Go types; their JSON shapes are httpapi's.
//
// # Caveats
//
// A command that lost an optimistic-concurrency race re-reads and tries
// again a few times; past that it fails with apierr.ErrBusy. Errors wrap the
// kinds of apierr, usually inside a *apierr.Error that carries the stable
// snake_case code the API shows, or a *apierr.ValidationError naming every
// bad field.
package control
