// Package testnats starts a real JetStream server for tests: in-process,
// its store in t.TempDir(), shut down by t.Cleanup.
package testnats

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/nats-io/nats.go"
)

// Server starts an embedded single-node server and returns it with an
// in-process connection.
// readyGuard bounds the wait for a test server to accept connections: a
// guard against a hang, not a pace (a loaded machine's node has taken
// over the default 10 s).
const readyGuard = 2 * time.Minute

func Server(tb testing.TB) (*embedded.Server, *nats.Conn) {
	tb.Helper()
	srv, err := embedded.Start(embedded.Config{StoreDir: tb.TempDir(), ReadyTimeout: readyGuard})
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

// Append writes recs with one round of acknowledgements (Log.AppendEach)
// and returns their sequences; any record that was not stored fails tb.
func Append(tb testing.TB, l *eventlog.Log, recs []eventlog.Record) []uint64 {
	tb.Helper()
	// A bound against a hang, not a pace: on a loaded machine the server
	// may leave a bulk of publishes unanswered past the log's own 10 s,
	// and an append with a deadline asks again until it (see
	// eventlog.Log.AppendEach).
	ctx, cancel := context.WithTimeout(context.Background(), appendGuard)
	defer cancel()
	seqs, errs := l.AppendEach(ctx, recs)
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("append %s #%d of %d: %v", recs[i].Type, i, len(recs), err)
		}
	}
	return seqs
}

// appendGuard bounds Append's wait for the server's answers.
const appendGuard = 3 * time.Minute

// Subscriber is the record of tenant's subscriber id upserted with one
// email address, id@example.com: the audience a test fills the log with.
func Subscriber(tenant, id string) eventlog.Record {
	return eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggSubscriber, id),
		Type: events.SubscriberUpserted, Tenant: tenant,
		Data: events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{"email": {id + "@example.com"}}}}
}
