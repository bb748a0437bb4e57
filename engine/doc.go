// Package engine is Herald's durable engine, the runtime behind control's
// commands (it satisfies control.Runtime). It fans an accepted trigger out
// to one run per subscriber and drives each run step by step through the
// tenant's Bridge, recording every step result as an event and replaying
// it, never re-running a completed step.
//
// # Basics
//
// Work arrives on the WORK stream: work.run.<tenant>.<run> asks a worker to
// advance a run (the first one of a single-subscriber trigger's run,
// stored before the trigger is accepted, carries the transaction id and
// finishes the trigger: see single.go), work.fanout.<tenant>.<txn> to
// finish a topic fan-out. A worker
// folds the run's events (kept folded in memory, re-read from the log only
// when the run's subject moved on without it), asks Decide what is next,
// calls the Bridge or delivery, and appends the result with the run
// subject's last sequence expected: one writer wins, a loser re-reads.
// Delays, wait timeouts and retries are messages scheduled on the run's
// own schedule subject, so a run has at most one pending durable timer.
// The last stretch before a run's instant is waited out in memory (a
// hold) on its unacknowledged work message, which a crash only delays.
//
// # Glossary
//
//   - run: one execution of a workflow for one subscriber (or one cron
//     tick), folded from the events of its subject into a
//     runstate.State.
//   - work message: a message on the WORK stream asking for a turn of a
//     run (work.run.*), a wake (work.wake), a fan-out or a cron tick.
//   - turn: one worker's hold on one run, under the run's lock (see
//     turn.go): it asks Decide for the next action and does it, step after
//     step, up to StepsPerTurn; it ends with a verdict.
//   - step: one action of a turn: a Bridge call and the recording of its
//     answer, a resume, a digest window's close.
//   - verdict: how a turn ended, which settle acts on: done and yield
//     acknowledge the work message, aside queues the rest of the turn,
//     hold keeps the message in memory until an instant, retry gives it
//     back to the server until an instant. A turn that fails returns an
//     error instead; errors mean only failures.
//   - timer: a run's one durable schedule, armed lead early (see
//     timers.go); it fires a wake message on work.wake.
//   - hold: keeping a work message in memory, unacknowledged, until its
//     run's instant (at most 2×lead away), then handing it to a worker as
//     a wake.
//   - wake: a held message whose instant came, or a fired timer; a
//     worker takes wakes before any other work (see scheduler.go).
//   - woke: said of a turn started by a wake; it steps aside after its
//     first Bridge call.
//   - aside: a woken turn that stepped aside: its Bridge answer is
//     recorded later, from the scheduler's later queue, so that the
//     worker is free for the next due run (see aside.go).
//   - resume: the end of a delay or a wait (its time came, or its signal
//     arrived), held by the turn and appended right after the Bridge call
//     it leads to (see record.go).
//   - held completion: a resume, or a send's result, that the turn's
//     state holds and the log does not yet; appended right after the
//     Bridge call it leads to, or in the run's RunCompleted when that call
//     ends the run (see hold in record.go).
//   - pressing: wakes press while a woken run recently reached its Bridge
//     call late; other work is then limited (see scheduler.go).
//   - job: a work message on its way to a worker, with what the scheduler
//     knows of it (woke, its instant, the turn it finishes).
//
// # Caveats
//
// Delivery of work is at least once: a worker that dies mid step leaves its
// message unacknowledged and the step runs again. A `run` step's callback
// may therefore run twice under failure; a `send` stays exactly once at
// the provider through the delivery idempotency key <runId>:<stepId>.
package engine
