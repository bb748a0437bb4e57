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
	t.Parallel() // long, and on a store of its own
	const runs, batch = 20000, 500
	f := newFanout(t, runs)
	s, tenant, ids, event, apply := f.s, f.tenant, f.ids, f.event, f.apply
	f.start(nil)
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
	err := s.view(func(tx *bolt.Tx) error {
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

// TestDeliveriesOfAFanoutShareTheirPages: a delivery's key in
// deliveries_by_run starts with its run's row key, so the deliveries of a
// few hundred runs that started one after another, recorded in one
// commit, go to a few neighbouring pages of the index, as the runs' rows
// do. Under their hashed run ids each went to a page of its own.
func TestDeliveriesOfAFanoutShareTheirPages(t *testing.T) {
	t.Parallel() // long, and on a store of its own
	const runs, batch = 20000, 500
	f := newFanout(t, runs)
	middle := func(i int) bool { return i >= runs/2 && i < runs/2+batch }
	attempted := func(i int) eventlog.Event {
		sub := fmt.Sprintf("s%07d", i)
		return f.event(f.ids[i], events.DeliveryAttempted, events.DeliveryAttemptedData{DeliveryAttempt: events.DeliveryAttempt{
			AttemptID: eventlog.NewID("att_"), RunID: f.ids[i], StepID: "email", SubscriberID: sub, ChannelKey: "email-smtp", Kind: "email"},
			Address: sub + "@example.com"})
	}
	// Every run starts, and all but the middle ones send at once.
	f.start(func(i int) []eventlog.Event {
		if middle(i) {
			return nil
		}
		return []eventlog.Event{attempted(i)}
	})
	var evs []eventlog.Event
	for i := runs / 2; i < runs/2+batch; i++ {
		evs = append(evs, attempted(i))
	}
	pages := f.apply(evs)
	t.Logf("a commit of %d runs' deliveries wrote %d pages", batch, pages)
	if pages > batch/4 {
		t.Errorf("a commit of %d runs' deliveries wrote %d pages: more than one a four runs", batch, pages)
	}
	// Each run's deliveries are still found by its id.
	for _, i := range []int{0, runs / 2, runs/2 + batch - 1, runs - 1} {
		rows, _, err := f.s.DeliveriesWhere(f.tenant, DeliveryFilter{RunID: f.ids[i]}, Page{Limit: 10})
		if err != nil || len(rows) != 1 || rows[0].RunID != f.ids[i] {
			t.Fatalf("the deliveries of run %d: %+v, %v", i, rows, err)
		}
	}
}

// fanout is a projection store fed a broadcast's run events by hand.
type fanout struct {
	t      *testing.T
	s      *Store
	tenant string
	txn    string
	ids    []string // the runs' ids, as the fan-out derives them
	seq    uint64
	at     time.Time
}

func newFanout(t *testing.T, runs int) *fanout {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f := &fanout{t: t, s: s, tenant: "ten_1", txn: "txn_1", ids: make([]string, runs), at: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	for i := range f.ids {
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00s%07d", f.tenant, f.txn, i))
		f.ids[i] = "run_" + hex.EncodeToString(h[:12])
	}
	return f
}

// event is the next event of the log, on run runID's subject.
func (f *fanout) event(runID, typ string, data any) eventlog.Event {
	f.seq++
	raw, err := json.Marshal(data)
	if err != nil {
		f.t.Fatal(err)
	}
	return eventlog.Event{ID: fmt.Sprintf("ev%d", f.seq), Type: typ, TenantID: f.tenant, At: f.at.Add(time.Duration(f.seq) * time.Millisecond),
		Data: raw, Seq: f.seq, Subject: eventlog.Subject(f.tenant, eventlog.AggRun, runID)}
}

// apply applies evs in one batch and returns the pages its commit wrote.
func (f *fanout) apply(evs []eventlog.Event) (pages int64) {
	count := func() int64 {
		st := f.s.db.Stats()
		return st.TxStats.GetPageCount()
	}
	before := count()
	if err := f.s.ApplyBatch(evs); err != nil {
		f.t.Fatal(err)
	}
	return count() - before
}

// start starts every run in fan-out order, a thousand a batch, each
// followed by what then returns for it (then nil: nothing).
func (f *fanout) start(then func(i int) []eventlog.Event) {
	for from := 0; from < len(f.ids); from += 1000 {
		var evs []eventlog.Event
		for i := from; i < min(from+1000, len(f.ids)); i++ {
			sub := fmt.Sprintf("s%07d", i)
			evs = append(evs, f.event(f.ids[i], events.RunStarted, events.RunStartedData{RunID: f.ids[i], TransactionID: f.txn, WorkflowID: "two", SubscriberID: &sub}))
			if then != nil {
				evs = append(evs, then(i)...)
			}
		}
		f.apply(evs)
	}
}
