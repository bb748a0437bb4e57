// Package bench measures Herald end to end, the way a user would compare
// it: `herald serve` runs as a child process on loopback (its embedded
// JetStream inside it), the benchmark process hosts a tenant Bridge built
// on package bridge and a go-smtp sink (package devmail), and drives the
// REST API like a tenant.
//
// # Basics
//
// Run executes the scenarios once per sync mode (HERALD_SYNC=interval and
// always), each mode on a fresh data directory:
//
//   - fanout: one topic trigger to N subscribers; from the POST to the
//     last message the SMTP sink accepted; runs/s.
//   - latency: sequential single-subscriber triggers; trigger → message in
//     the sink; p50/p95/p99.
//   - individual: single-subscriber triggers from 64 concurrent clients
//     (one trigger per user event); runs/s, serve CPU per run and per
//     Bridge call, trigger → message p50/p95/p99.
//   - timers: runs that each `delay` then run a step; how late the step
//     after the delay executes at the Bridge, against the delay's `until`.
//   - api: subscriber upserts/s, GETs/s and PUT-then-GET pairs/s, each
//     answer checked for read-your-writes.
//   - recovery: a topic fan-out whose herald serve is killed (SIGKILL)
//     once half of its messages arrived and restarted on the same data
//     directory; the time from the restart to the last subscriber's
//     message against AckWait + 5 s, and every subscriber's messages
//     counted (a duplicate or a missing one fails the run).
//
// The scenarios that send run the workflow Config.Steps chooses: a `send`
// step (two Bridge calls a run: the step, then the completion), or a `run`
// step returning a record of about 200 bytes, then the `send` (three).
//
// Each scenario starts a new `herald serve` process on the mode's data
// directory and reports its peak RSS (VmHWM), its CPU time, and the growth
// of the data directory per run. Every message the sink receives is
// checked: each subscriber of a fan-out gets exactly one.
//
// # Caveats
//
// Everything runs on one machine: the Bridge, the sink and the clients
// compete with herald serve for the CPUs, as they would on a developer's
// machine, and figures move with whatever else runs there (the load
// average is recorded with each scenario). RSS and CPU figures need Linux
// (/proc).
//
// The recovery scenario's peak RSS is the restarted process's (the killed
// one's is reported apart); its CPU is both processes'. It waits for
// duplicates until RecoveryAckWait + 2 s after the restart, so it takes
// that long at least; a send the kill cut holds its key for delivery's
// lease (a minute) before it is taken over.
package bench
