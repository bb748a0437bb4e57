// Package inboxfeed is the live side of the in-app inbox: one tail of the
// event log's inbox subjects per process, fanned out in memory to the
// listeners of each subscriber (the SSE streams of GET /v1/inbox/stream).
//
// # Basics
//
// Start opens the tail at the stream's end; Listen registers a listener
// of one subscriber and returns the feed's position: every inbox event
// after that sequence reaches the listener's channel, in log order. What
// came before it is read from the projections (the inbox read model keys
// messages by their stream sequence), so a client resuming after
// sequence L is given (L, position] from the read model and the rest live,
// with nothing lost or repeated between the two.
//
// # Caveats
//
// A listener whose channel is full (its client reads too slowly) is
// dropped: its channel is closed and Overflowed reports it. The client
// reconnects with the last id it saw and catches up from the read model;
// a slow client never blocks the feed or another listener.
//
// One tail serves every stream of the process, whatever their number: a
// JetStream consumer per stream would put a consumer on the server for
// each open browser tab.
package inboxfeed
