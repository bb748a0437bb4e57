package projections_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestDeliveryReports: a sent row is found by its channel and provider
// message id; each report adds an event, oldest first, and moves the
// status up only (an open keeps it, a late delivered after a bounce does
// not undo the bounce); a report of an attempt with no row changes
// nothing; the channel's inbound generation follows its rotations; a
// rebuild from the log holds the same.
func TestDeliveryReports(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-resend", events.ChannelConfigured, t0,
		events.ChannelConfiguredData{ChannelKey: "email-resend", Kind: "email", Enabled: true})
	last := appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-resend", events.ChannelInboundRotated, t0,
		events.ChannelInboundRotatedData{ChannelKey: "email-resend", Generation: "g2"})
	key := "run_1:mail"
	appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, key, events.DeliveryAttempted, t0,
		events.DeliveryAttemptedData{DeliveryAttempt: events.DeliveryAttempt{AttemptID: "att_1", IdempotencyKey: key,
			RunID: "run_1", StepID: "mail", SubscriberID: "ada", ChannelKey: "email-resend", Kind: "email"}, Address: "ada@example.com"})
	appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, key, events.DeliverySent, t0,
		events.DeliverySentData{AttemptID: "att_1", ProviderMessageID: "em_1"})
	report := func(attempt, status, bounce, id string) uint64 {
		return appendChannelEvent(t, log, "ten_a", eventlog.AggDelivery, events.ReportSubjectID("email-resend", id),
			events.DeliveryReported, t0, events.DeliveryReportedData{AttemptID: attempt, ChannelKey: "email-resend",
				Status: status, Bounce: bounce, ProviderEventID: id})
	}
	report("att_1", events.ReportDelivered, "", "e1")
	report("att_1", events.ReportOpened, "", "e2")
	report("att_1", events.ReportBounced, events.BounceHard, "e3")
	report("att_none", events.ReportComplained, "", "e4")
	last = max(last, report("att_1", events.ReportDelivered, "", "e5"))
	if err := st.WaitFor(context.Background(), last); err != nil {
		t.Fatal(err)
	}

	row, err := st.DeliveryByProviderID("ten_a", "email-resend", "em_1")
	if err != nil || row.AttemptID != "att_1" {
		t.Fatalf("by provider id: %+v %v", row, err)
	}
	if _, err := st.DeliveryByProviderID("ten_a", "email-ses", "em_1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("another channel's id: %v", err)
	}
	if _, err := st.DeliveryByProviderID("ten_b", "email-resend", "em_1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("another tenant's: %v", err)
	}
	var types []string
	for _, e := range row.Events {
		types = append(types, e.Type+":"+e.Detail)
	}
	if row.Status != "bounced" || len(types) != 4 || types[0] != "delivered:" || types[1] != "opened:" ||
		types[2] != "bounced:hard" || types[3] != "delivered:" || !row.Events[0].At.Equal(t0) {
		t.Fatalf("row %s %v", row.Status, types)
	}
	ch, err := st.Channel("ten_a", "email-resend")
	if err != nil || ch.InboundGeneration != "g2" {
		t.Fatalf("channel %+v %v", ch, err)
	}
	checkRebuild(t, log, st)
}
