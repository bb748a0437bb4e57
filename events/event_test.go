package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
)

// A line of MarshalLine decodes into a Line that is the event, where it
// is stored included.
func TestLineRoundTrip(t *testing.T) {
	e := events.Event{ID: "ev_1", Type: events.TenantCreated, TenantID: "ten_a",
		At: time.Date(2026, 11, 27, 1, 2, 3, 4, time.UTC), Data: json.RawMessage(`{"tenantId":"ten_a"}`),
		Seq: 42, Subject: "ev.ten_a.tenant.ten_a"}
	b, err := e.MarshalLine()
	if err != nil {
		t.Fatal(err)
	}
	var got events.Line
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != e.ID || got.Type != e.Type || got.TenantID != e.TenantID || !got.At.Equal(e.At) ||
		string(got.Data) != string(e.Data) || got.Seq != e.Seq || got.Subject != e.Subject {
		t.Fatalf("read back %+v, want %+v", got, e)
	}
}
