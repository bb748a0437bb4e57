package projections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestDeliveriesWhere: deliveries list oldest first or newest first,
// narrowed by subscriber, workflow (through the row's run), status, kind,
// channel and a time window, through the run index too; a filtered page
// reads at most MaxDeliveriesRead rows and then ends short with a cursor
// that reads on, so paging through a sparse match finds every row once.
func TestDeliveriesWhere(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	sub := func(s string) *string { return &s }
	appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_w", events.RunStarted, t0,
		events.RunStartedData{RunID: "run_w", TransactionID: "txn_1", WorkflowID: "welcome", SubscriberID: sub("ada")})
	appendChannelEvent(t, log, "ten_a", eventlog.AggRun, "run_d", events.RunStarted, t0,
		events.RunStartedData{RunID: "run_d", TransactionID: "txn_2", WorkflowID: "digest", SubscriberID: sub("bob")})
	// Six rows, a minute apart: ada's email via welcome (sent, skipped),
	// bob's sms via digest (sent), ada's in_app via digest (sent), and
	// two more of ada's email via welcome.
	type row struct{ run, subscriber, channel, kind string }
	rows := []row{{"run_w", "ada", "email-smtp", "email"}, {"run_w", "ada", "email-smtp", "email"}, {"run_d", "bob", "sms-twilio", "sms"},
		{"run_d", "ada", "in-app", "in_app"}, {"run_w", "ada", "email-smtp", "email"}, {"run_w", "ada", "email-smtp", "email"}}
	var last uint64
	for i, r := range rows {
		at := t0.Add(time.Duration(i) * time.Minute)
		k := fmt.Sprintf("%s:step%d", r.run, i)
		a := events.DeliveryAttempt{AttemptID: fmt.Sprintf("att_%d", i), IdempotencyKey: k, RunID: r.run, StepID: fmt.Sprintf("step%d", i),
			SubscriberID: r.subscriber, ChannelKey: r.channel, Kind: r.kind}
		if i == 1 {
			last = appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, k, events.DeliverySkipped, at,
				events.DeliverySkippedData{DeliveryAttempt: a, Reason: "preference"})
			continue
		}
		appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, k, events.DeliveryAttempted, at, events.DeliveryAttemptedData{DeliveryAttempt: a})
		last = appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, k, events.DeliverySent, at,
			events.DeliverySentData{AttemptID: a.AttemptID, ProviderMessageID: fmt.Sprintf("m%d", i)})
	}
	if err := st.WaitFor(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	ids := func(rows []projections.Delivery) string {
		s := ""
		for _, r := range rows {
			s += r.AttemptID[len("att_"):]
		}
		return s
	}
	for _, c := range []struct {
		name string
		f    projections.DeliveryFilter
		want string
	}{
		{"all", projections.DeliveryFilter{}, "012345"},
		{"newest first", projections.DeliveryFilter{Desc: true}, "543210"},
		{"ada", projections.DeliveryFilter{SubscriberID: "ada"}, "01345"},
		{"digest's", projections.DeliveryFilter{WorkflowID: "digest", Desc: true}, "32"},
		{"sent", projections.DeliveryFilter{Status: "sent"}, "02345"},
		{"skipped", projections.DeliveryFilter{Status: "skipped"}, "1"},
		{"sms", projections.DeliveryFilter{Kind: "sms"}, "2"},
		{"in-app channel", projections.DeliveryFilter{ChannelKey: "in-app"}, "3"},
		{"a window", projections.DeliveryFilter{Since: t0.Add(time.Minute), Until: t0.Add(4 * time.Minute)}, "123"},
		{"one run, newest first", projections.DeliveryFilter{RunID: "run_w", Desc: true}, "5410"},
		{"one run's sent email", projections.DeliveryFilter{RunID: "run_w", Status: "sent", Kind: "email"}, "045"},
		{"nothing", projections.DeliveryFilter{WorkflowID: "other"}, ""},
	} {
		got, next, err := st.DeliveriesWhere("ten_a", c.f, projections.Page{Limit: 50})
		if err != nil || ids(got) != c.want || next != "" {
			t.Errorf("%s: %q next %q (%v), want %q", c.name, ids(got), next, err, c.want)
		}
		for _, r := range got {
			if want := map[string]string{"run_w": "welcome", "run_d": "digest"}[r.RunID]; r.WorkflowID != want {
				t.Errorf("%s: %s's workflow %q, want %q", c.name, r.AttemptID, r.WorkflowID, want)
			}
		}
		// Paged two at a time, in either direction, the same rows.
		all := ""
		p := projections.Page{Limit: 2}
		for range 10 {
			got, next, err := st.DeliveriesWhere("ten_a", c.f, p)
			if err != nil {
				t.Fatal(err)
			}
			all += ids(got)
			if next == "" {
				break
			}
			p.Cursor = next
		}
		if all != c.want {
			t.Errorf("%s, paged by two: %q, want %q", c.name, all, c.want)
		}
	}
	if _, _, err := st.DeliveriesWhere("ten_b", projections.DeliveryFilter{}, projections.Page{}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := st.DeliveriesWhere("ten_b", projections.DeliveryFilter{Desc: true}, projections.Page{}); len(got) != 0 {
		t.Errorf("another tenant's deliveries: %d", len(got))
	}
}

// TestDeliveriesWhereReadsBoundedWork: a filter that matches one row
// behind more than MaxDeliveriesRead others answers a short page (empty)
// with a cursor, and the next page finds the row.
func TestDeliveriesWhereReadsBoundedWork(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	n := projections.MaxDeliveriesRead + 1
	var last uint64
	for i := range n {
		kind, sub := "email", "ada"
		if i == 0 {
			kind, sub = "sms", "bob" // the one match, first in the log: last newest first
		}
		k := fmt.Sprintf("run_1:s%d", i)
		last = appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, k, events.DeliverySkipped, t0,
			events.DeliverySkippedData{DeliveryAttempt: events.DeliveryAttempt{AttemptID: fmt.Sprintf("att_%d", i), IdempotencyKey: k,
				RunID: "run_1", StepID: fmt.Sprintf("s%d", i), SubscriberID: sub, ChannelKey: kind + "-x", Kind: kind}, Reason: "preference"})
	}
	if err := st.WaitFor(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	f := projections.DeliveryFilter{SubscriberID: "bob", Desc: true}
	got, next, err := st.DeliveriesWhere("ten_a", f, projections.Page{Limit: 10})
	if err != nil || len(got) != 0 || next == "" {
		t.Fatalf("first page: %d rows, next %q (%v), want none and a cursor", len(got), next, err)
	}
	got, next, err = st.DeliveriesWhere("ten_a", f, projections.Page{Limit: 10, Cursor: next})
	if err != nil || len(got) != 1 || got[0].AttemptID != "att_0" || next != "" {
		t.Fatalf("second page: %+v next %q (%v)", got, next, err)
	}
}
