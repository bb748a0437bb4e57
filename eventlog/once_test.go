package eventlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestOnceHoldsAcrossProcessesAndRestarts: a key used by one process is
// used for another process on the same server, and still after the
// server restarts on its store; the same value again is no reuse; once
// the key's TTL has passed, it may be used anew.
func TestOnceHoldsAcrossProcessesAndRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(srv *embedded.Server, ttl time.Duration) *eventlog.Once {
		t.Helper()
		nc, err := srv.Connect()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		l, err := eventlog.Open(ctx, nc, eventlog.Config{})
		if err != nil {
			t.Fatal(err)
		}
		once, err := l.Once(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return once
	}
	srv, err := embedded.Start(embedded.Config{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a, b := open(srv, time.Hour), open(srv, time.Hour)
	if err := a.Use(ctx, "tok1", []byte("request 1")); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := a.Use(ctx, "tok1", []byte("request 1")); err != nil {
		t.Fatalf("the same request again: %v", err)
	}
	if err := b.Use(ctx, "tok1", []byte("request 2")); !errors.Is(err, eventlog.ErrUsed) {
		t.Fatalf("another process, another request: %v, want ErrUsed", err)
	}
	if err := b.Use(ctx, "tok2", []byte("request 2")); err != nil {
		t.Fatalf("another key: %v", err)
	}
	srv.Shutdown()

	srv, err = embedded.Start(embedded.Config{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	if err := open(srv, time.Hour).Use(ctx, "tok1", []byte("request 3")); !errors.Is(err, eventlog.ErrUsed) {
		t.Fatalf("after a restart: %v, want ErrUsed", err)
	}

	// A bucket reopened with a short TTL forgets its uses after it.
	short := open(srv, time.Second)
	if err := short.Use(ctx, "tok3", []byte("request 4")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "tok3 expires", func() error { return short.Use(ctx, "tok3", []byte("request 5")) })
}
