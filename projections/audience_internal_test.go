package projections

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// TestSubscriberRowAsMarshalWritesIt: the row spliced from the event's
// data is byte for byte json.Marshal's of the Subscriber, and the data the
// splice cannot take (no contacts, another shape) is left to json.Marshal.
func TestSubscriberRowAsMarshalWritesIt(t *testing.T) {
	fr, paris := "fr", "Europe/Paris"
	at := time.Date(2026, 11, 24, 7, 55, 1, 120000000, time.UTC)
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, d := range []events.SubscriberUpsertedData{
		{SubscriberID: "a", Contacts: map[string][]string{}},
		{SubscriberID: "a<b>&", Contacts: map[string][]string{"sms": {"+1"}, "email": {"a@x.io", "b@x.io"}}, Locale: &fr,
			Attributes: json.RawMessage(`{"plan":"<pro>","n":[1,2]}`)},
		{SubscriberID: "z", Contacts: map[string][]string{}, Locale: &fr, Timezone: &paris},
	} {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		ev := eventlog.Event{Type: events.SubscriberUpserted, TenantID: "t", At: at, Seq: 42, Data: data}
		var back events.SubscriberUpsertedData
		if err := ev.Decode(&back); err != nil {
			t.Fatal(err)
		}
		for _, epoch := range []uint64{0, 7} {
			row, ok := subscriberRow(ev, back, created, epoch)
			want, _ := json.Marshal(Subscriber{SubscriberID: back.SubscriberID, Contacts: back.Contacts, Locale: back.Locale,
				Attributes: back.Attributes, Timezone: back.Timezone, CreatedAt: created, UpdatedAt: at, Seq: 42, TokenEpoch: epoch})
			if !ok || !bytes.Equal(row, want) {
				t.Errorf("row of %s (epoch %d) = %s %v\nwant %s", data, epoch, row, ok, want)
			}
		}
	}
	for _, data := range []string{`{"subscriberId":"a","contacts":null}`, `{"contacts":{},"subscriberId":"a"}`} {
		ev := eventlog.Event{Type: events.SubscriberUpserted, TenantID: "t", At: at, Seq: 42, Data: json.RawMessage(data)}
		var d events.SubscriberUpsertedData
		if err := ev.Decode(&d); err != nil {
			t.Fatal(err)
		}
		if row, ok := subscriberRow(ev, d, created, 7); ok {
			t.Errorf("row of %s = %s, want it left to json.Marshal", data, row)
		}
	}
}
