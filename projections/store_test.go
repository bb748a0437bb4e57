package projections_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
)

func TestReadYourWrites(t *testing.T) {
	log, st := followed(t)
	ctx := context.Background()
	for i := range 50 {
		id := fmt.Sprintf("ten_%d", i)
		seq := appendTenant(t, log, id)
		if err := st.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
		got, err := st.Tenant(id)
		if err != nil || got.Name != "Name "+id {
			t.Fatalf("read after write: %+v %v", got, err)
		}
	}
	if err := st.WaitCaughtUp(ctx, log); err != nil {
		t.Fatal(err)
	}
}

func TestWaitForTimesOut(t *testing.T) {
	_, st := followed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := st.WaitFor(ctx, 1000); err == nil {
		t.Fatal("waited for a sequence that was never written")
	}
}

func TestRebuildEqualsLiveAndRestartKeepsState(t *testing.T) {
	log := testnats.Log(t)
	dir := t.TempDir()
	livePath := filepath.Join(dir, "live.db")
	st, err := projections.Open(livePath, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 200 {
		appendTenant(t, log, fmt.Sprintf("ten_%03d", i))
		// Interleave applies so the live file saw many small batches.
		if i%17 == 0 {
			if err := st.CatchUp(ctx, log); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.CatchUp(ctx, log); err != nil {
		t.Fatal(err)
	}
	live, err := st.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	applied := st.Applied()
	st.Close()

	// Restart on the same file: state and checkpoint kept.
	st, err = projections.Open(livePath, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied() != applied {
		t.Fatalf("checkpoint after reopen %d, want %d", st.Applied(), applied)
	}
	if _, err := st.Tenant("ten_042"); err != nil {
		t.Fatalf("tenant after reopen: %v", err)
	}
	st.Close()

	rebuilt, err := projections.Rebuild(ctx, filepath.Join(dir, "rebuilt.db"), log, projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	sum, err := rebuilt.Checksum()
	if err != nil {
		t.Fatal(err)
	}
	if sum != live {
		t.Fatalf("rebuilt checksum %s != live %s", sum, live)
	}
}

func TestCorruptFileIsReplacedAndRebuilt(t *testing.T) {
	log := testnats.Log(t)
	path := filepath.Join(t.TempDir(), "p.db")
	appendTenant(t, log, "ten_a")
	if err := os.WriteFile(path, []byte("definitely not a bbolt file, just garbage bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := teststore.RunningAt(t, log, path)
	if _, err := st.Tenant("ten_a"); err != nil {
		t.Fatalf("after rebuild: %v", err)
	}
	if _, err := os.Stat(path + ".corrupt"); err != nil {
		t.Fatalf("corrupt file not kept aside: %v", err)
	}
}

func TestApplyBatchSkipsAppliedEvents(t *testing.T) {
	log, st := followed(t)
	seq := appendTenant(t, log, "ten_x")
	if err := st.WaitFor(context.Background(), seq); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Checksum()
	// A redelivered event with other content must not be applied again.
	stale := eventlog.Event{Seq: seq, Type: events.TenantCreated, TenantID: "ten_x",
		Data: []byte(`{"tenantId":"ten_x","name":"changed"}`)}
	if err := st.ApplyBatch([]eventlog.Event{stale}); err != nil {
		t.Fatal(err)
	}
	after, _ := st.Checksum()
	if before != after {
		t.Fatal("an already applied event was applied again")
	}
}
