package projections_test

import (
	"encoding/json"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/preferences"
)

// TestPreferencesProjection: the preferences of a subscriber and the
// workflow defaults of the last sync are read back; a delete drops the
// preferences; the subscriber's Seq follows its preference events; a
// rebuild gives the same file.
func TestPreferencesProjection(t *testing.T) {
	a := newAudience(t, "ten_a")
	a.upsert("ann")
	a.upsert("bob")
	set := func(id, doc string) uint64 {
		return a.append(eventlog.AggSubscriber, id, events.SubscriberPreferencesUpdated,
			events.SubscriberPreferencesUpdatedData{SubscriberID: id, Preferences: json.RawMessage(doc), Actor: "hk_test1234"})
	}
	seq := set("ann", `{"channels":{"email":false},"workflows":{"digest":{"enabled":false}}}`)
	set("bob", `{"channels":{"sms":false},"workflows":{}}`)
	set("ghost", `{"channels":{"sms":false},"workflows":{}}`) // no such subscriber: ignored
	a.append(eventlog.AggSubscriber, "bob", events.SubscriberDeleted, events.SubscriberDeletedData{SubscriberID: "bob"})
	a.append(eventlog.AggWorkflows, "ten_a", events.WorkflowsSynced, events.WorkflowsSyncedData{Workflows: []events.SyncedWorkflow{
		{WorkflowID: "old"}}})
	a.append(eventlog.AggWorkflows, "ten_a", events.WorkflowsSynced, events.WorkflowsSyncedData{Workflows: []events.SyncedWorkflow{
		{WorkflowID: "reset", Critical: true},
		{WorkflowID: "digest", Preferences: &events.WorkflowPreferences{Channels: map[string]bool{"email": false}}}}})

	doc, err := a.st.Preferences("ten_a", "ann")
	if err != nil || doc.Channels["email"] != false || len(doc.Channels) != 1 || *doc.Workflows["digest"].Enabled {
		t.Fatalf("ann: %+v %v", doc, err)
	}
	if s, _ := a.st.Subscriber("ten_a", "ann"); s.Seq != seq {
		t.Fatalf("ann's Seq %d, want its preference event's %d", s.Seq, seq)
	}
	for _, id := range []string{"bob", "ghost"} {
		if doc, err := a.st.Preferences("ten_a", id); err != nil || !doc.Empty() {
			t.Fatalf("%s: %+v %v", id, doc, err)
		}
	}
	wfs, err := a.st.TenantWorkflowDefaults("ten_a")
	if err != nil || len(wfs) != 2 || wfs[0].WorkflowID != "digest" || wfs[1].WorkflowID != "reset" {
		t.Fatalf("workflows %+v %v", wfs, err)
	}
	if d, _ := a.st.WorkflowDefaults("ten_a", "reset"); !d.Critical {
		t.Fatalf("reset: %+v", d)
	}
	if d, _ := a.st.WorkflowDefaults("ten_a", "digest"); d.Critical || preferences.Allows(preferences.Doc{}, "digest", d, "email") {
		t.Fatalf("digest: %+v", d)
	}
	if d, _ := a.st.WorkflowDefaults("ten_a", "old"); d.Critical || d.Channels != nil {
		t.Fatalf("a workflow gone from the sync: %+v", d)
	}

	checkRebuild(t, a.log, a.st)
}
