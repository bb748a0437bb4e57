package main

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
)

const secret = "whsec_example"

// drive plays the engine for one run: it executes until the run completes,
// answering each waitForEvent with signal, and returns the steps in order
// with the subject of each e-mail.
func drive(t *testing.T, url string, req wire.ExecuteRequest, signal json.RawMessage) []string {
	t.Helper()
	var c bridgeclient.Client
	var trail []string
	for range 10 {
		o, err := c.Execute(context.Background(), url, secret, req)
		if err != nil {
			t.Fatal(err)
		}
		if o.Kind == bridgeclient.OutcomeCompleted {
			return trail
		}
		if o.Kind != bridgeclient.OutcomeStep {
			t.Fatalf("outcome %+v", o)
		}
		s := o.Step
		entry, output := s.StepID, s.Output
		switch s.Type {
		case wire.StepSend:
			to := "subscriber"
			if s.To != nil {
				to = *s.To
			}
			var content wire.EmailContent // the subject of an email, the body of the others
			if err := json.Unmarshal(s.Content, &content); err != nil {
				t.Fatal(err)
			}
			entry += " → " + to + " (" + s.Channel + "): " + cmp.Or(content.Subject, content.Body)
			output = json.RawMessage(`{"attemptId":"att_1","status":"sent"}`)
			if s.To == nil && req.Subscriber != nil && len(req.Subscriber.Contacts[s.Channel]) == 0 {
				output = json.RawMessage(`{"attemptId":"att_1","status":"skipped","reason":"no_address"}`)
			}
		case wire.StepWaitForEvent:
			entry += " (" + s.Event + ", " + s.Timeout.Duration().String() + ")"
			output = signal
		}
		trail = append(trail, entry)
		req.Steps = append(req.Steps, wire.CompletedStep{StepID: s.StepID, Type: s.Type, Output: output})
	}
	t.Fatal("run did not complete")
	return nil
}

func TestWorkflows(t *testing.T) {
	srv := httptest.NewServer(bridge.Serve(newRegistry(config{DigestRecipient: "ops", DigestSchedule: "0 9 * * *", ActivityCron: "0 9 * * *"}), bridge.Options{SigningKey: secret}))
	defer srv.Close()

	tests := []struct {
		name   string
		req    wire.ExecuteRequest
		signal string
		want   []string // each step's entry starts with its line
	}{
		{"welcome by e-mail", wire.ExecuteRequest{WorkflowID: "welcome", Subscriber: &bridge.Subscriber{
			SubscriberID: "u1", Attributes: map[string]any{"firstName": "Ada"}, Contacts: map[string][]string{"email": {"ada@example.com"}},
		}}, "", []string{"fetch-profile", "welcome-email → subscriber (email): Welcome to Acme, Ada!"}},
		{"welcome by text without an e-mail address", wire.ExecuteRequest{WorkflowID: "welcome", Subscriber: &bridge.Subscriber{
			SubscriberID: "u1", Attributes: map[string]any{"firstName": "Ada"}, Contacts: map[string][]string{"sms": {"+14155550123"}},
		}}, "", []string{"fetch-profile", "welcome-email → subscriber (email): Welcome to Acme, Ada!", "welcome-sms → subscriber (sms): Welcome to Acme, Ada!"}},
		{"approval granted", wire.ExecuteRequest{WorkflowID: "approval", Subscriber: &bridge.Subscriber{SubscriberID: "u1"},
			Payload: json.RawMessage(`{"title":"New laptop","approverId":"boss"}`),
		}, `{"by":"boss"}`, []string{
			"ask-approver → boss (email): Approval needed: New laptop",
			"wait-approval (approved, 48h0m0s)",
			"notify-approved → subscriber (email): Approved: New laptop",
		}},
		{"approval timed out", wire.ExecuteRequest{WorkflowID: "approval", Subscriber: &bridge.Subscriber{SubscriberID: "u1"},
			Payload: json.RawMessage(`{"title":"New laptop","approverId":"boss","timeout":"1d"}`),
		}, "null", []string{
			"ask-approver → boss (email): Approval needed: New laptop",
			"wait-approval (approved, 24h0m0s)",
			"notify-expired → subscriber (email): No decision on New laptop",
		}},
		{"order shipped on the kinds named", wire.ExecuteRequest{WorkflowID: "order_shipped", Subscriber: &bridge.Subscriber{
			SubscriberID: "u1", Contacts: map[string][]string{"email": {"ada@example.com"}}},
			Payload: json.RawMessage(`{"orderId":"A-1","carrier":"Parcelco","kinds":["email","in_app"]}`),
		}, "", []string{"email → subscriber (email): Your order A-1 has shipped", "in-app → subscriber (in_app): Order shipped"}},
		{"daily digest", wire.ExecuteRequest{WorkflowID: "daily_digest"}, "", []string{
			"collect-stats", "send-digest → ops (email): Acme daily digest for 20", // the day the step read from the clock
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drive(t, srv.URL, tt.req, json.RawMessage(tt.signal))
			ok := len(got) == len(tt.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], tt.want[i])
			}
			if !ok {
				t.Fatalf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	wfs, err := (&bridgeclient.Client{}).Discover(context.Background(), srv.URL, secret)
	if err != nil || len(wfs) != 12 || wfs[2].WorkflowID != "daily_digest" || wfs[2].Schedule == nil || *wfs[2].Schedule != "0 9 * * *" {
		t.Fatalf("discover: %+v, %v", wfs, err)
	}
}
