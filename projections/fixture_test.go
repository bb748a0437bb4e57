package projections_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
)

// The set-up every projection test starts from: a fresh event log, a
// store following it, events appended at a fixed time, and the check that
// a rebuild from the log gives the same bytes.

// t0 is when the events of a test happen, fixed so that what a
// projection keeps of them is the same every run.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)

// followed starts a fresh event log and a store following it.
func followed(t testing.TB) (*eventlog.Log, *projections.Store) {
	t.Helper()
	log := testnats.Log(t)
	return log, teststore.Running(t, log)
}

// followedAt is followed with the store on the file at path, for tests
// that look at the file itself.
func followedAt(t testing.TB, path string) (*eventlog.Log, *projections.Store) {
	t.Helper()
	log := testnats.Log(t)
	return log, teststore.RunningAt(t, log, path)
}

// appendChannelEvent appends one event of tenant's aggregate at a fixed
// time and returns its sequence.
func appendChannelEvent(t testing.TB, log *eventlog.Log, tenant, agg, id, typ string, at time.Time, data any) uint64 {
	t.Helper()
	seq, err := log.Append(context.Background(), eventlog.Record{
		Subject: eventlog.Subject(tenant, agg, id), Type: typ, Tenant: tenant, Data: data, At: at})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func appendTenant(t testing.TB, log *eventlog.Log, id string) uint64 {
	t.Helper()
	return appendChannelEvent(t, log, id, eventlog.AggTenant, id, events.TenantCreated, time.Time{},
		events.TenantCreatedData{TenantID: id, Name: "Name " + id})
}

// checkRebuild fails the test unless a store rebuilt from log holds the
// same bytes as st.
func checkRebuild(t testing.TB, log *eventlog.Log, st *projections.Store) {
	t.Helper()
	live, err := st.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := projections.Rebuild(context.Background(), filepath.Join(t.TempDir(), "rebuilt.db"), log, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if sum, err := rebuilt.Checksum(); err != nil || sum != live {
		t.Fatalf("rebuilt %s != live %s (%v)", sum, live, err)
	}
}
