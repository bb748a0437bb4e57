package projections

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// aggEvent is an event of the aggregate agg/id at seq.
func aggEvent(t *testing.T, seq uint64, agg, id, typ string, data any) eventlog.Event {
	t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return eventlog.Event{ID: fmt.Sprintf("evt_%d", seq), Type: typ, TenantID: "ten_1", Seq: seq,
		At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Data: raw, Subject: eventlog.Subject("ten_1", agg, id)}
}

// TestImportedAudienceFillsItsPages: subscribers imported in id order, and
// their subscriptions, leave the audience's pages nine tenths full, not
// half: a fan-out reading every recipient maps half as many pages.
func TestImportedAudienceFillsItsPages(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "p.db"), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seq uint64
	for chunk := range 10 {
		var evs []eventlog.Event
		var ids []string
		for i := range 1000 {
			id := fmt.Sprintf("s%07d", chunk*1000+i)
			ids = append(ids, id)
			seq++
			evs = append(evs, aggEvent(t, seq, eventlog.AggSubscriber, id, events.SubscriberUpserted,
				events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{"email": {id + "@example.com"}}}))
		}
		seq++
		evs = append(evs, aggEvent(t, seq, eventlog.AggTopic, "news", events.SubscribersSubscribed,
			events.SubscribersSubscribedData{TopicKey: "news", SubscriberIDs: ids}))
		if err := s.ApplyBatch(evs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSubscribers, bucketTopicMembers, bucketSubscriberTopics} {
			st := tx.Bucket(name).Stats()
			fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
			t.Logf("%s: %.0f%% full, %d leaves", name, 100*fill, st.LeafPageN)
			if fill < 0.8 {
				t.Errorf("%s: leaves %.0f%% full (%d leaves)", name, 100*fill, st.LeafPageN)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
