package projections_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestWebhooksProjection: endpoints with their updates and rotations; the
// attempts kept per endpoint are bounded, oldest dropped first; the
// backlog holds the messages that failed and will be retried; a delete
// takes all of it away; a rebuild gives the same bytes.
func TestWebhooksProjection(t *testing.T) {
	log, st := followed(t)
	ctx := context.Background()
	add := func(agg, id, typ string, at time.Time, data any) uint64 {
		seq := appendChannelEvent(t, log, "ten_a", agg, id, typ, at, data)
		if err := st.WaitFor(ctx, seq); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	created := add(eventlog.AggWebhook, "wh_1", events.WebhookCreated, t0, events.WebhookCreatedData{
		WebhookID: "wh_1", URL: "https://a.example/hook", Events: []string{"run.failed"}, SealedSecret: "v1:00000000:one"})
	off, url := false, "https://b.example/hook"
	add(eventlog.AggWebhook, "wh_1", events.WebhookUpdated, t0.Add(time.Minute),
		events.WebhookUpdatedData{WebhookID: "wh_1", URL: &url, Enabled: &off})
	until := t0.Add(24 * time.Hour)
	add(eventlog.AggWebhook, "wh_1", events.WebhookSecretRotated, t0.Add(2*time.Minute),
		events.WebhookSecretRotatedData{WebhookID: "wh_1", SealedSecret: "v1:00000000:two", PreviousSealed: "v1:00000000:one", PreviousUntil: until})
	w, err := st.Webhook("ten_a", "wh_1")
	if err != nil || w.URL != url || w.Enabled || w.Seq != created || w.SealedSecret != "v1:00000000:two" ||
		w.PreviousSealed != "v1:00000000:one" || !w.PreviousUntil.Equal(until) || !w.CreatedAt.Equal(t0) ||
		!w.Subscribed("run.failed") || w.Subscribed("run.completed") {
		t.Fatalf("webhook %+v %v", w, err)
	}
	if _, err := st.Webhook("ten_b", "wh_1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("another tenant's: %v", err)
	}

	// Attempts beyond the bound drop the oldest; the backlog follows the
	// outcomes.
	total := projections.MaxWebhookAttempts + 5
	for i := range total {
		status, final := events.WebhookFailed, false
		if i%2 == 1 {
			status, final = events.WebhookSucceeded, true
		}
		add(eventlog.AggWebhookAttempts, "wh_1", events.WebhookAttempted, t0.Add(time.Duration(i)*time.Second),
			events.WebhookAttemptedData{WebhookID: "wh_1", MessageID: fmt.Sprintf("msg_%d", i/2), Type: "run.failed",
				Status: status, HTTPStatus: 500, Attempt: 1 + i%2, Final: final, EventAt: t0.Add(time.Duration(i/2) * time.Hour)})
	}
	rows, next, err := st.WebhookAttempts("ten_a", "wh_1", projections.Page{Limit: 2000}, false)
	if err != nil || next != "" || len(rows) != projections.MaxWebhookAttempts || rows[0].MessageID != "msg_2" ||
		rows[len(rows)-1].MessageID != fmt.Sprintf("msg_%d", (total-1)/2) {
		t.Fatalf("%d attempts (first %+v), %v", len(rows), rows[0], err)
	}
	// Newest first, paged: the first page ends where the second starts.
	newest, next, err := st.WebhookAttempts("ten_a", "wh_1", projections.Page{Limit: 3}, true)
	if err != nil || len(newest) != 3 || next == "" || newest[0] != rows[len(rows)-1] || newest[2] != rows[len(rows)-3] {
		t.Fatalf("newest first: %+v next %q, %v", newest, next, err)
	}
	if more, _, err := st.WebhookAttempts("ten_a", "wh_1", projections.Page{Limit: 1, Cursor: next}, true); err != nil ||
		len(more) != 1 || more[0] != rows[len(rows)-4] {
		t.Fatalf("newest first, second page: %+v, %v", more, err)
	}
	backlog, err := st.WebhookBacklogs()
	// Every message but the last (failed, not final) succeeded.
	if err != nil || len(backlog) != 1 || backlog[0].WebhookID != "wh_1" || backlog[0].TenantID != "ten_a" ||
		!backlog[0].Oldest.Equal(t0.Add(time.Duration((total-1)/2)*time.Hour)) {
		t.Fatalf("backlog %+v %v", backlog, err)
	}

	checkRebuild(t, log, st)

	add(eventlog.AggWebhook, "wh_1", events.WebhookDeleted, t0, events.WebhookDeletedData{WebhookID: "wh_1"})
	if _, err := st.Webhook("ten_a", "wh_1"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	if rows, _, _ := st.WebhookAttempts("ten_a", "wh_1", projections.Page{}, false); len(rows) != 0 {
		t.Fatalf("attempts of a deleted endpoint: %d", len(rows))
	}
	if backlog, _ := st.WebhookBacklogs(); len(backlog) != 0 {
		t.Fatalf("backlog of a deleted endpoint: %+v", backlog)
	}
}
