// Package control handles the commands of the REST API: it validates a
// command against projections caught up to the aggregate's last event,
// turns it into events, appends them with that sequence expected, and
// waits until the local projections applied them, so the caller's next
// read sees its write.
//
// # Caveats
//
// A command that lost an optimistic-concurrency race re-reads and tries
// again a few times; past that it fails with apierr.ErrBusy. Errors are the
// sentinels of errors.go, usually inside a *apierr.Error that carries the
// stable snake_case code the API shows.
package control
