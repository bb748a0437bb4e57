// Package teststore gives tests real projections: a store on a bbolt file
// in t.TempDir(), closed by t.Cleanup, with its projector running over a
// real event log when asked.
package teststore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/projections"
)

// Open opens a store on a fresh file, closed when the test ends.
func Open(tb testing.TB) *projections.Store {
	tb.Helper()
	st, err := projections.Open(filepath.Join(tb.TempDir(), "p.db"), projections.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// Running opens a store on a fresh file and runs its projector over log
// until the test ends. It returns once the projector caught up with log.
func Running(tb testing.TB, log *eventlog.Log) *projections.Store {
	tb.Helper()
	return RunningAt(tb, log, filepath.Join(tb.TempDir(), "p.db"))
}

// RunningAt is Running on the file at path.
func RunningAt(tb testing.TB, log *eventlog.Log, path string) *projections.Store {
	tb.Helper()
	st, err := projections.Open(path, projections.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer close(done)
		if err := st.Run(ctx, log, ready); err != nil {
			tb.Errorf("projector: %v", err)
		}
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		st.Close()
	})
	select {
	case <-ready:
	case <-done:
	case <-time.After(time.Minute): // a guard against a hang only
		tb.Fatal("projector not ready")
	}
	return st
}
