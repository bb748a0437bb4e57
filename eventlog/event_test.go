package eventlog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// envelopeSlow is the envelope as json.Marshal writes it, the reference
// appendEnvelope must match byte for byte.
func envelopeSlow(t testing.TB, ev Event, data []byte) []byte {
	t.Helper()
	ev.Data = data
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var envelopeCases = []struct {
	name string
	ev   Event
	data string
}{
	{"plain", Event{ID: "evt_abc", Type: "SubscriberUpserted", TenantID: "t_1", At: time.Date(2026, 11, 24, 7, 40, 1, 123456789, time.UTC)}, `{"subscriberId":"a","contacts":{}}`},
	{"whole second", Event{ID: "evt_x", Type: "T", TenantID: "t", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, `1`},
	{"trailing zeros", Event{ID: "evt_x", Type: "T", TenantID: "t", At: time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC)}, `"s"`},
	{"escaped html", Event{ID: "evt_<&>", Type: "T", TenantID: "t", At: time.Unix(1, 0).UTC()}, `{}`},
	{"quote", Event{ID: `evt_"`, Type: "T", TenantID: "t", At: time.Unix(1, 0).UTC()}, `{}`},
	{"non ascii", Event{ID: "evt_é", Type: "T", TenantID: "t", At: time.Unix(1, 0).UTC()}, `{}`},
	{"control", Event{ID: "evt_\x01", Type: "T", TenantID: "t", At: time.Unix(1, 0).UTC()}, `{}`},
	{"null data", Event{ID: "evt_n", Type: "T", TenantID: "t", At: time.Unix(1, 0).UTC()}, `null`},
	{"far year", Event{ID: "evt_y", Type: "T", TenantID: "t", At: time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)}, `{}`},
}

// TestEnvelopeAsMarshalWritesIt checks the hand-written envelope against
// json.Marshal's, and that decodeRaw reads every envelope back as
// json.Unmarshal does.
func TestEnvelopeAsMarshalWritesIt(t *testing.T) {
	for _, c := range envelopeCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := envelope(c.ev, []byte(c.data))
			if c.name == "far year" {
				if err == nil {
					t.Fatalf("envelope of year 12000 = %s, want json.Marshal's error", got)
				}
				return
			}
			want := envelopeSlow(t, c.ev, []byte(c.data))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("envelope = %s, %v\nwant       %s", got, err, want)
			}
			checkDecode(t, got)
		})
	}
}

// TestReadEnvelopeTakesTheFastPath makes sure the messages the log writes
// are read without json.Unmarshal, so the fast path is not dead.
func TestReadEnvelopeTakesTheFastPath(t *testing.T) {
	msg, err := Record{Subject: "ev.t.subscriber.a", Type: "SubscriberUpserted", Tenant: "t_1",
		Data: map[string]any{"subscriberId": "a", "contacts": map[string]any{"email": []string{"a@example.com"}}}}.message()
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if !readEnvelope(msg.Data, &ev) {
		t.Fatalf("readEnvelope refused the log's own message %s", msg.Data)
	}
	checkDecode(t, msg.Data)
}

// checkDecode asserts decodeRaw reads data as json.Unmarshal does.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	var want Event
	werr := json.Unmarshal(data, &want)
	got, gerr := decodeRaw("ev.s", 7, data)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("decodeRaw(%q) error %v, json.Unmarshal error %v", data, gerr, werr)
	}
	if werr != nil {
		return
	}
	want.Seq, want.Subject = 7, "ev.s"
	if !got.At.Equal(want.At) || got.At.Location().String() != want.At.Location().String() {
		t.Fatalf("decodeRaw(%q).At = %v, want %v", data, got.At, want.At)
	}
	got.At, want.At = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeRaw(%q) = %+v\nwant %+v", data, got, want)
	}
}

// FuzzReadEnvelope checks that whatever readEnvelope accepts,
// json.Unmarshal reads to the same event.
func FuzzReadEnvelope(f *testing.F) {
	for _, c := range envelopeCases {
		if b, err := json.Marshal(Event{ID: c.ev.ID, Type: c.ev.Type, TenantID: c.ev.TenantID, At: c.ev.At, Data: json.RawMessage(c.data)}); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"a","type":"b","tenantId":"c","at":"2026-01-01T00:00:00Z","data":{"x":1},"extra":2}`))
	f.Add([]byte(`{"id":"a","type":"b","tenantId":"c","at":"2026-01-01T00:00:00Z","data": {"x":1} }`))
	f.Add([]byte(`{"id":"a","type":"b","tenantId":"c","at":"2026-01-01T00:00:00+02:00","data":[1,2]}`))
	f.Add([]byte(`{"id":"a\u0041","type":"b","tenantId":"c","at":"2026-01-01T00:00:00Z","data":1}`))
	f.Add([]byte("{\"id\":\"\xff\",\"type\":\"b\",\"tenantId\":\"c\",\"at\":\"2026-01-01T00:00:00Z\",\"data\":1}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev Event
		if !readEnvelope(data, &ev) {
			return
		}
		checkDecode(t, data)
	})
}
