// Package eventlog is Herald's source of truth: an append-only log of
// events on the JetStream stream EVENTS, and the WORK stream that carries
// what must be done next (advance a run, finish a fan-out, fire a tick),
// now or at a scheduled instant.
//
// # Basics
//
// Every command of the service becomes one or more events appended to the
// aggregate subject it concerns, ev.<tenant>.<aggregate>.<token(id)>. Ids
// are data: Token encodes them into a single subject token so a '.', '*',
// '>' or space in an id can neither break a subject nor widen a filter.
//
// Append writes one event, optionally expecting the subject's last
// sequence (optimistic concurrency, ErrConflict on a lost race) and
// optionally carrying a message id the stream de-duplicates on. AppendEach
// writes many events with one round of asynchronous acknowledgements and
// reports each one's outcome.
//
// History reads one subject from a sequence on, with a cost that does not
// grow with the rest of the stream. Tail follows the whole stream from a
// sequence, in batches, for projections.
//
// # Caveats
//
// A conflict on R1 and R3 streams comes back with different API codes
// (10071, 10164); both map to ErrConflict. A publish retried after a lost
// acknowledgement answers a conflict on R1 where R3 answers a duplicate;
// Append looks at the stored message's id before calling it a conflict.
//
// The server closes a connection that sends a control line over its limit
// (4096 bytes), and nats.go does not reconnect it: one over-long subject
// would take the process down. Every publish, schedule, purge and read by
// subject is checked first (CheckSubject: at most MaxSubjectBytes, no empty
// token, space or control character, no wildcard written to) and refused
// with ErrBadSubject (ErrSubjectTooLong for the length) without reaching
// the server. Callers validate ids at the edge; this is the last line.
package eventlog
