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
//   - fanout: one topic trigger to N subscribers, a one-`send` workflow;
//     from the POST to the last message the SMTP sink accepted; runs/s.
//   - latency: sequential single-subscriber triggers; trigger → message in
//     the sink; p50/p95/p99.
//   - timers: runs that each `delay` then run a step; how late the step
//     after the delay executes at the Bridge, against the delay's `until`.
//   - api: subscriber upserts/s, GETs/s and PUT-then-GET pairs/s, each
//     answer checked for read-your-writes.
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
package bench
