package projections

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/testwait"
)

// A WaitFor for an event that is never applied gives up after MaxWait with
// ErrWaitTimeout, which callers treat as a deadline (503, a message given
// back) rather than holding a worker for ever.
func TestWaitForGivesUpAfterMaxWait(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), Options{MaxWait: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.WaitFor(context.Background(), 1)
	if !errors.Is(err, ErrWaitTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor of an event never applied: %v", err)
	}
}

// A projector that applies nothing while the stream holds events for it
// reports itself stalled (Stalled, an error line), and well again once it
// applies.
func TestStalledProjectorIsReported(t *testing.T) {
	logs := &testlog.Buffer{}
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), Options{StallAfter: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log := testnats.Log(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx, log, nil)
	rec := func(id string) eventlog.Record {
		return eventlog.Record{Subject: eventlog.Subject("t1", eventlog.AggSubscriber, id), Type: events.SubscriberUpserted,
			Tenant: "t1", Data: events.SubscriberUpsertedData{SubscriberID: id}}
	}
	seqs := testnats.Append(t, log, []eventlog.Record{rec("a")})
	if err := s.WaitFor(ctx, seqs[0]); err != nil {
		t.Fatal(err)
	}
	// Idle with nothing to apply: not stalled.
	time.Sleep(300 * time.Millisecond)
	if s.Stalled() {
		t.Fatal("an idle projector reports itself stalled")
	}
	// The projector's writes are held (as a lost tail would hold them).
	func() {
		s.dbMu.Lock()
		defer s.dbMu.Unlock() // also when the wait fails
		seqs = testnats.Append(t, log, []eventlog.Record{rec("b")})
		testwait.For(t, "a projector holding back an event reported stalled", s.Stalled)
	}()
	if err := s.WaitFor(ctx, seqs[0]); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the projector applying again reported so", func() bool { return !s.Stalled() })
	if out := logs.String(); !strings.Contains(out, "projector stalled") || !strings.Contains(out, "projector applying again") {
		t.Fatalf("log lines: %s", out)
	}
}
