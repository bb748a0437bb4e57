// Package embedded starts a NATS server with JetStream inside the herald
// process: the single-node store of `herald serve` in development, and the
// members of a loopback cluster in tests.
//
// # Basics
//
// Start returns a running server whose JetStream store lives under
// Config.StoreDir. Connect gives an in-process client connection that needs
// no TCP listener. Shutdown stops the server and waits for it to finish.
//
// # Caveats
//
// A single node started with Config.Listen false accepts only in-process
// clients. Cluster members always listen, on loopback by default, because
// routes are TCP connections.
package embedded
