package projections_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestSuppressionsProjection: an add creates the row, a repeat replaces
// the reason and keeps the creation, a removal deletes it; lists go in
// (kind, address) order, per tenant, filtered by kind, paged; a rebuild
// gives the same bytes.
func TestSuppressionsProjection(t *testing.T) {
	log, st := followed(t)
	ctx := context.Background()
	add := func(tenant, kind, addr, reason string, at time.Time) uint64 {
		return appendChannelEvent(t, log, tenant, eventlog.AggSuppression, events.SuppressionID(kind, addr),
			events.SuppressionAdded, at, events.SuppressionAddedData{Kind: kind, Address: addr, Reason: reason})
	}
	first := add("ten_a", "email", "b@example.com", "hard_bounce", t0)
	add("ten_a", "email", "a@example.com", "manual", t0)
	add("ten_a", "sms", "+14155550123", "manual", t0)
	add("ten_b", "email", "b@example.com", "manual", t0)
	t1 := t0.Add(time.Hour)
	seq := add("ten_a", "email", "b@example.com", "customer asked", t1)
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	row, err := st.Suppression("ten_a", "email", "b@example.com")
	if err != nil || row.Reason != "customer asked" || !row.CreatedAt.Equal(t0) || row.Created != first || row.Seq != seq {
		t.Fatalf("after a new reason: %+v %v", row, err)
	}

	all, next, err := st.Suppressions("ten_a", "", projections.Page{Limit: 2})
	if err != nil || len(all) != 2 || next == "" || all[0].Address != "a@example.com" || all[1].Address != "b@example.com" {
		t.Fatalf("first page: %+v %q %v", all, next, err)
	}
	rest, next, err := st.Suppressions("ten_a", "", projections.Page{Limit: 2, Cursor: next})
	if err != nil || len(rest) != 1 || next != "" || rest[0].Kind != "sms" {
		t.Fatalf("second page: %+v %q %v", rest, next, err)
	}
	if sms, _, err := st.Suppressions("ten_a", "sms", projections.Page{}); err != nil || len(sms) != 1 || sms[0].Address != "+14155550123" {
		t.Fatalf("?kind=sms: %+v %v", sms, err)
	}

	seq = appendChannelEvent(t, log, "ten_a", eventlog.AggSuppression, events.SuppressionID("email", "b@example.com"),
		events.SuppressionRemoved, t1, events.SuppressionRemovedData{Kind: "email", Address: "b@example.com"})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Suppression("ten_a", "email", "b@example.com"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("after removal: %v", err)
	}
	if row, err := st.Suppression("ten_b", "email", "b@example.com"); err != nil || row.Reason != "manual" {
		t.Fatalf("the other tenant's: %+v %v", row, err)
	}

	checkRebuild(t, log, st)
}
