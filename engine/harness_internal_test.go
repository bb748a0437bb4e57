package engine

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
)

// newTestEngine builds an engine over a fresh event log and a store of
// its own. The store's projector does not run: a test that needs the
// projections to follow the log runs it, when it wants them to.
func newTestEngine(t *testing.T, cfg Config) (*Engine, *eventlog.Log, *projections.Store) {
	t.Helper()
	l := testnats.Log(t)
	store := teststore.Open(t)
	return New(cfg, Deps{Log: l, Store: store}), l, store
}

// workConsumer reads the work messages on subject as a worker would, each
// to be acknowledged by hand, so that a test sees what was enqueued or
// scheduled there.
func workConsumer(ctx context.Context, t *testing.T, l *eventlog.Log, subject string) jetstream.Consumer {
	t.Helper()
	cons, err := l.JetStream().CreateOrUpdateConsumer(ctx, eventlog.WorkStream, jetstream.ConsumerConfig{
		Durable: "test", FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return cons
}
