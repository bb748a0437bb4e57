package projections_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// A row leaves out the idempotency key its run and step ids make, and
// reads it back; any other key is kept.
func TestDeliveryRowKey(t *testing.T) {
	for _, c := range []struct {
		name    string
		a       events.DeliveryAttempt
		written bool // the key is in the row's JSON
	}{
		{"a run's send", events.DeliveryAttempt{AttemptID: "att_1", IdempotencyKey: "run_f4980c02:email", RunID: "run_f4980c02", StepID: "email"}, false},
		{"POST /v1/deliver", events.DeliveryAttempt{AttemptID: "att_2", IdempotencyKey: "order-42"}, true},
		{"a run's send under another key", events.DeliveryAttempt{AttemptID: "att_3", IdempotencyKey: "custom", RunID: "run_f4980c02", StepID: "email"}, true},
		{"a step id with a colon", events.DeliveryAttempt{AttemptID: "att_4", IdempotencyKey: "run_x:a:b", RunID: "run_x", StepID: "a:b"}, false},
	} {
		row := projections.Delivery{DeliveryAttempt: c.a, Address: "ada@example.com", Status: projections.DeliverySent}
		data, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(data, []byte(`"idempotencyKey"`)); got != c.written {
			t.Errorf("%s: key written %v, want %v: %s", c.name, got, c.written, data)
		}
		var back projections.Delivery
		if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, row) {
			t.Errorf("%s: read back %+v (%v), want %+v", c.name, back, err, row)
		}
	}
}
