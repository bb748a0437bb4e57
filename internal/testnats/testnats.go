// Package testnats starts a real JetStream server for tests: in-process,
// its store in t.TempDir(), shut down by t.Cleanup.
package testnats

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/eventlog"
	"github.com/nats-io/nats.go"
)

// Server starts an embedded single-node server and returns it with an
// in-process connection.
func Server(tb testing.TB) (*embedded.Server, *nats.Conn) {
	tb.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("embedded nats: %v", err)
	}
	tb.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return srv, nc
}

// Log starts a server and opens the event log on it.
func Log(tb testing.TB) *eventlog.Log {
	tb.Helper()
	_, nc := Server(tb)
	l, err := eventlog.Open(context.Background(), nc, eventlog.Config{})
	if err != nil {
		tb.Fatalf("eventlog: %v", err)
	}
	return l
}
