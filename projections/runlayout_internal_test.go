package projections

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// TestRunRowsOfAFanoutShareTheirPages: a run's row is keyed by the event
// that started it, so the rows of a broadcast's runs, started in fan-out
// order, sit side by side, and a commit of the events of a few hundred
// runs that started one after another rewrites a few neighbouring pages.
// Keyed by their hashed run ids, each run's row sat on a page of its own,
// and the same commit wrote well over a page a run. Once every run has
// ended, the finished rows (moved to runs_done at their run's end) fill
// their pages.
func TestRunRowsOfAFanoutShareTheirPages(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const tenant, txn, runs, batch = "ten_1", "txn_1", 20000, 500
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var seq uint64
	event := func(runID, typ string, data any) eventlog.Event {
		seq++
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		return eventlog.Event{ID: fmt.Sprintf("ev%d", seq), Type: typ, TenantID: tenant, At: at.Add(time.Duration(seq) * time.Millisecond),
			Data: raw, Seq: seq, Subject: eventlog.Subject(tenant, eventlog.AggRun, runID)}
	}
	ids := make([]string, runs)
	for i := range ids {
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00s%07d", tenant, txn, i))
		ids[i] = "run_" + hex.EncodeToString(h[:12])
	}
	apply := func(evs []eventlog.Event) (pages int64) {
		count := func() int64 {
			st := s.db.Stats()
			return st.TxStats.GetPageCount()
		}
		before := count()
		if err := s.ApplyBatch(evs); err != nil {
			t.Fatal(err)
		}
		return count() - before
	}
	for from := 0; from < runs; from += 1000 {
		var evs []eventlog.Event
		for i := from; i < from+1000; i++ {
			sub := fmt.Sprintf("s%07d", i)
			evs = append(evs, event(ids[i], events.RunStarted, events.RunStartedData{RunID: ids[i], TransactionID: txn, WorkflowID: "two", SubscriberID: &sub}))
		}
		apply(evs)
	}
	// The runs of the middle of the broadcast complete, their last step
	// with them, in one batch.
	var evs []eventlog.Event
	for i := runs / 2; i < runs/2+batch; i++ {
		evs = append(evs, event(ids[i], events.RunCompleted, events.RunCompletedData{Step: &events.StepCompletedData{
			StepID: "email", Type: "send", Output: json.RawMessage(`{"attemptId":"att_x","status":"sent"}`)}}))
	}
	pages := apply(evs)
	t.Logf("a commit of %d runs' ends wrote %d pages", batch, pages)
	if pages > batch/4 {
		t.Errorf("a commit of %d runs' ends wrote %d pages: more than one a four runs", batch, pages)
	}
	if ok, err := getRunRow(s, tenant, ids[runs/2]); err != nil || !ok {
		t.Fatalf("the row of a completed run: %v, %v", ok, err)
	}
	// Every run ends: the finished rows fill their pages (a row rewritten
	// in place as it shrank left them 40 % full), and no running row is
	// left behind.
	for from := 0; from < runs; from += 1000 {
		evs = evs[:0]
		for i := from; i < from+1000; i++ {
			if i < runs/2 || i >= runs/2+batch {
				evs = append(evs, event(ids[i], events.RunCompleted, events.RunCompletedData{}))
			}
		}
		apply(evs)
	}
	err = s.view(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketRuns).Stats().KeyN; n != 0 {
			t.Errorf("%d running rows left once every run ended", n)
		}
		st := tx.Bucket(bucketRunsDone).Stats()
		fill := float64(st.LeafInuse) / float64(st.LeafPageN*s.db.Info().PageSize)
		t.Logf("finished rows: %d in %d pages, %.0f %% full", st.KeyN, st.LeafPageN, 100*fill)
		if st.KeyN != runs || fill < 0.7 {
			t.Errorf("finished rows: %d in %d pages, %.0f %% full; want %d, at least 70 %% full", st.KeyN, st.LeafPageN, 100*fill, runs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := getRunRow(s, tenant, ids[0]); err != nil || !ok {
		t.Fatalf("the row of a completed run: %v, %v", ok, err)
	}
}

// getRunRow reads a run's row through run_ids.
func getRunRow(s *Store, tenant, runID string) (ok bool, err error) {
	var st Run
	err = s.view(func(tx *bolt.Tx) error {
		ok, err = getRun(tx, tenant, runID, &st)
		return err
	})
	return ok && st.RunID == runID && st.Status == "completed", err
}
