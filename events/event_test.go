package events_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
)

// A line of MarshalLine reads back as the event it was, where it is
// stored included; what is not a line is ErrBadEvent.
func TestLineRoundTrip(t *testing.T) {
	e := events.Event{ID: "ev_1", Type: events.TenantCreated, TenantID: "ten_a",
		At: time.Date(2026, 11, 27, 1, 2, 3, 4, time.UTC), Data: json.RawMessage(`{"tenantId":"ten_a"}`),
		Seq: 42, Subject: "ev.ten_a.tenant.ten_a"}
	line, err := e.MarshalLine()
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.UnmarshalLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != e.ID || got.Type != e.Type || got.TenantID != e.TenantID || !got.At.Equal(e.At) ||
		string(got.Data) != string(e.Data) || got.Seq != e.Seq || got.Subject != e.Subject {
		t.Fatalf("read back %+v, want %+v", got, e)
	}
	if _, err := events.UnmarshalLine([]byte("not json")); !errors.Is(err, events.ErrBadEvent) {
		t.Fatalf("err %v, want ErrBadEvent", err)
	}
}
