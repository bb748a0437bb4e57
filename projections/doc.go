// Package projections materialises Herald's read models from the event
// log into a local bbolt file: tenants and API keys, the audience,
// channels, the Bridge binding, workflows, runs and the two ledgers.
//
// # Basics
//
// Open opens (or creates) the file. Run follows the EVENTS stream from the
// stored checkpoint and applies events in order, many per bbolt
// transaction, writing the checkpoint (the last applied stream sequence)
// in the same transaction. WaitFor blocks until a sequence is applied:
// a handler that appended an event at sequence N waits for N before it
// reads, which gives read-your-writes with no second store. WaitCaughtUp
// waits for the stream's last sequence as of the call, so a write made
// through another process is visible too.
//
// # Caveats
//
// The file is a cache of the log. Applying must be deterministic (event
// time, never the clock), so Rebuild — replaying from sequence 1 into an
// empty file — yields byte for byte the same content, as Checksum shows.
// The file is written without fsync: after a power loss a damaged file is
// detected at Open and rebuilt from the log.
package projections
