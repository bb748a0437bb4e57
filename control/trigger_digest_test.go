package control

import (
	"encoding/json"
	"testing"

	"github.com/heraldhq/herald/events"
)

// TestTriggerRequestDigest: the same request in other spellings is the
// same; another workflow, target or payload is not; a transaction
// accepted before digests were stored (no requestDigest in its event) is
// compared on its fields.
func TestTriggerRequestDigest(t *testing.T) {
	accept := func(body string) events.TriggerAcceptedData {
		t.Helper()
		var req struct {
			WorkflowID string `json:"workflowId"`
			To         *struct {
				SubscriberID *string   `json:"subscriberId"`
				Topics       *[]string `json:"topics"`
			} `json:"to"`
			Payload       json.RawMessage `json:"payload"`
			TransactionID *string         `json:"transactionId"`
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		cmd := TriggerCommand{WorkflowID: req.WorkflowID, Payload: req.Payload, TransactionID: req.TransactionID}
		if req.To != nil {
			cmd.To = &TriggerTarget{SubscriberID: req.To.SubscriberID, Topics: req.To.Topics}
		}
		acc, err := cmd.validate()
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return acc
	}
	first := accept(`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":1,"b":{"c":[1,2.50]}},"transactionId":"t"}`)
	old := first
	old.RequestDigest = ""
	raw, _ := json.Marshal(old)
	if err := json.Unmarshal(raw, &old); err != nil || old.RequestDigest != "" {
		t.Fatalf("an old event: %s", raw)
	}
	cases := []struct {
		body string
		same bool
	}{
		{`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":1,"b":{"c":[1,2.50]}},"transactionId":"t"}`, true},
		{`{"transactionId":"t","payload":{ "b":{"c":[1, 2.50]}, "a":1 },"to":{"subscriberId":"u1"},"workflowId":"w"}`, true},
		{`{"workflowId":"w2","to":{"subscriberId":"u1"},"payload":{"a":1,"b":{"c":[1,2.50]}},"transactionId":"t"}`, false},
		{`{"workflowId":"w","to":{"subscriberId":"u2"},"payload":{"a":1,"b":{"c":[1,2.50]}},"transactionId":"t"}`, false},
		{`{"workflowId":"w","to":{"topics":["u1"]},"payload":{"a":1,"b":{"c":[1,2.50]}},"transactionId":"t"}`, false},
		{`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":2,"b":{"c":[1,2.50]}},"transactionId":"t"}`, false},
		{`{"workflowId":"w","to":{"subscriberId":"u1"},"transactionId":"t"}`, false},
	}
	for _, c := range cases {
		repeat := accept(c.body)
		for name, f := range map[string]events.TriggerAcceptedData{"stored digest": first, "old event": old} {
			same, err := sameRequest(f, repeat)
			if err != nil || same != c.same {
				t.Errorf("%s, %s: same = %v, %v; want %v", name, c.body, same, err, c.same)
			}
		}
	}
	// No payload, null and {} are one request.
	a := accept(`{"workflowId":"w","to":{"subscriberId":"u1"},"transactionId":"t"}`)
	b := accept(`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":null,"transactionId":"t"}`)
	c := accept(`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{},"transactionId":"t"}`)
	if a.RequestDigest == "" || a.RequestDigest != b.RequestDigest || b.RequestDigest != c.RequestDigest {
		t.Fatalf("an absent, null and empty payload differ: %q %q %q", a.RequestDigest, b.RequestDigest, c.RequestDigest)
	}
	// A trigger whose id Herald makes stores no digest, and a repeat of
	// that id (with or without its own digest) is compared on its fields.
	made := accept(`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":1}}`)
	if made.RequestDigest != "" {
		t.Fatalf("a trigger without a transaction id stored the digest %q", made.RequestDigest)
	}
	for _, c := range []struct {
		body string
		same bool
	}{
		{`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{ "a":1 },"transactionId":"t"}`, true},
		{`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":2},"transactionId":"t"}`, false},
	} {
		repeat := accept(c.body)
		for name, r := range map[string]events.TriggerAcceptedData{"repeat": repeat, "repeat without its digest": {
			WorkflowID: repeat.WorkflowID, To: repeat.To, Payload: repeat.Payload}} {
			if same, err := sameRequest(made, r); err != nil || same != c.same {
				t.Errorf("%s, %s: same = %v, %v; want %v", name, c.body, same, err, c.same)
			}
		}
	}
}
