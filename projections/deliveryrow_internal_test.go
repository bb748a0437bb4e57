package projections

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
)

func TestDeliveryRowRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 12, 3, 192596905, time.UTC)
	send := events.DeliveryAttempt{AttemptID: "att_1", IdempotencyKey: "run_f4980c02:email", RunID: "run_f4980c02",
		StepID: "email", SubscriberID: "ada", ChannelKey: "email-smtp", Kind: "email"}
	for _, c := range []Delivery{
		{},
		{DeliveryAttempt: send, Address: "ada@example.com", Status: DeliveryPending, CreatedAt: at, UpdatedAt: at},
		{DeliveryAttempt: send, Address: "ada@example.com", Status: DeliverySent, ProviderMessageID: "<m1@herald>",
			CreatedAt: at, UpdatedAt: at.Add(time.Second),
			Events: []DeliveryEvent{{Type: events.ReportDelivered, At: at.Add(2 * time.Second)},
				{Type: events.ReportBounced, At: at.Add(time.Hour), Detail: "hard"}}},
		{DeliveryAttempt: send, Status: DeliveryFailed, CreatedAt: at, UpdatedAt: at,
			Error: &DeliveryError{Code: "provider_error", Message: "550 mailbox ✗", Transient: true}},
		{DeliveryAttempt: send, Status: DeliveryFailed, Error: &DeliveryError{}},
		{DeliveryAttempt: send, Status: DeliverySkipped, Reason: "suppressed"},
		{CreatedAt: time.Unix(0, 0).UTC(), UpdatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	} {
		row := encodeDelivery(&c)
		var got Delivery
		if err := decodeDelivery(row, &got); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, c)
		}
		// A JSON row (of a file an older ModelsVersion built, which Open
		// rebuilds) is not read as one.
		old, _ := json.Marshal(c)
		if err := decodeDelivery(old, &got); err == nil {
			t.Errorf("a JSON row read as %+v", got)
		}
		// Every cut of the row, and a byte too many, is an error.
		for i := range len(row) {
			if err := decodeDelivery(row[:i], &got); err == nil {
				t.Errorf("%+v: the first %d of %d bytes read without error", c, i, len(row))
			}
		}
		if err := decodeDelivery(append(row, 0), &got); err == nil {
			t.Errorf("%+v: a byte past the row read without error", c)
		}
	}
}

// A row leaves out the idempotency key its run and step ids make, and
// reads it back; any other key is kept.
func TestDeliveryRowKey(t *testing.T) {
	for _, c := range []struct {
		name    string
		a       events.DeliveryAttempt
		written bool // the key is in the row
	}{
		{"a run's send", events.DeliveryAttempt{AttemptID: "att_1", IdempotencyKey: "run_f4980c02:email", RunID: "run_f4980c02", StepID: "email"}, false},
		{"POST /v1/deliver", events.DeliveryAttempt{AttemptID: "att_2", IdempotencyKey: "order-42"}, true},
		{"a run's send under another key", events.DeliveryAttempt{AttemptID: "att_3", IdempotencyKey: "custom", RunID: "run_f4980c02", StepID: "email"}, true},
		{"a run's send without a key", events.DeliveryAttempt{AttemptID: "att_5", RunID: "run_f4980c02", StepID: "email"}, true},
		{"a step id with a colon", events.DeliveryAttempt{AttemptID: "att_4", IdempotencyKey: "run_x:a:b", RunID: "run_x", StepID: "a:b"}, false},
	} {
		row := Delivery{DeliveryAttempt: c.a, Address: "ada@example.com", Status: DeliverySent}
		data := encodeDelivery(&row)
		if got := data[1]&dlvKey != 0; got != c.written {
			t.Errorf("%s: key written %v, want %v: %q", c.name, got, c.written, data)
		}
		if c.a.IdempotencyKey != "" && bytes.Contains(data, []byte(c.a.IdempotencyKey)) != c.written {
			t.Errorf("%s: the key's bytes in the row: %q", c.name, data)
		}
		var back Delivery
		if err := decodeDelivery(data, &back); err != nil || !reflect.DeepEqual(back, row) {
			t.Errorf("%s: read back %+v (%v), want %+v", c.name, back, err, row)
		}
	}
}

// Damaged rows are errors, never a panic; a row that reads writes a row
// that reads the same.
func TestDeliveryRowDamaged(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	good := encodeDelivery(&Delivery{DeliveryAttempt: events.DeliveryAttempt{AttemptID: "att_1", RunID: "run_1", StepID: "e"},
		Status: DeliveryFailed, Error: &DeliveryError{Code: "c", Message: "m"},
		Events: []DeliveryEvent{{Type: "delivered"}}})
	for range 20000 {
		row := append([]byte(nil), good...)
		if rnd.IntN(2) == 0 {
			row = make([]byte, 1+rnd.IntN(60))
			for i := range row {
				row[i] = byte(rnd.Uint32())
			}
			row[0] = deliveryRowBinary
		} else {
			row[rnd.IntN(len(row))] = byte(rnd.Uint32())
		}
		var d Delivery
		if decodeDelivery(row, &d) != nil {
			continue
		}
		var again Delivery
		if err := decodeDelivery(encodeDelivery(&d), &again); err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("%x read as %+v, written and read again as %+v (%v)", row, d, again, err)
		}
	}
}
