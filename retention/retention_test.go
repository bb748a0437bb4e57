package retention_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// A service keeping finished runs 3 s: of three runs that each send an
// email and an in-app message and then wait for a signal, the two
// signalled ones finish and leave (404 run_not_found, their events and
// their sends' events gone from the log, their delivery rows and
// transactions gone, the in-app message that was read gone, the unread one
// kept), never before the retention since their end; the one still
// waiting stays whole.
func TestFinishedRunsLeaveAfterTheRetention(t *testing.T) {
	t.Parallel()
	const retention = 3 * time.Second
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{Tune: func(c *service.Config) {
		c.RunRetention, c.RetentionEvery = retention, 100*time.Millisecond
	}})
	tenant, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	must := func(method, path, token string, body any, want int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, token, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
		}
		return r
	}
	must("POST", "/v1/channels", key, map[string]any{"channelKey": "in-app", "config": map[string]any{}}, 201)
	note := bridge.MustWorkflow("note", func(ctx *bridge.Context, _ any) error {
		for _, ch := range []bridge.Channel{bridge.Email, bridge.InApp} {
			if _, err := bridge.Send(ctx, string(ch), ch, func(context.Context) (bridge.SendContent, error) {
				return bridge.SendContent{Subject: "note", Body: ctx.RunID}, nil
			}); err != nil {
				return err
			}
		}
		_, _, err := bridge.WaitForEvent[any](ctx, "ack", "ack", time.Hour)
		return err
	})
	h.Bridge(key, bridge.NewRegistry().MustRegister(note))
	must("POST", "/v1/sync", key, nil, 200)
	must("PUT", "/v1/subscribers/u1", key, map[string]any{"contacts": map[string]any{"email": []string{"u1@example.com"}}}, 201)

	trigger := func(txn string) string {
		var res struct{ Runs []struct{ RunID string } }
		must("POST", "/v1/events", key, map[string]any{"workflowId": "note", "to": map[string]any{"subscriberId": "u1"},
			"transactionId": txn}, 202).JSON(t, &res)
		if len(res.Runs) != 1 {
			t.Fatalf("trigger %s: %+v", txn, res)
		}
		return res.Runs[0].RunID
	}
	read, unread, waiting := trigger("t-read"), trigger("t-unread"), trigger("t-waiting")
	for _, id := range []string{read, unread, waiting} {
		if run := h.WaitRun(key, id, "waiting", "failed", "completed"); run["status"] != "waiting" {
			t.Fatalf("run %s: %v", id, run)
		}
	}
	type row struct {
		MessageID, RunID string
		ReadAt           *string
	}
	inbox := func() map[string]row {
		var l struct{ Data []row }
		must("GET", "/v1/subscribers/u1/inbox", key, nil, 200).JSON(t, &l)
		out := map[string]row{}
		for _, r := range l.Data {
			out[r.RunID] = r
		}
		return out
	}
	msgs := inbox()
	var tok struct{ Token string }
	must("POST", "/v1/subscribers/u1/inbox-tokens", key, nil, 201).JSON(t, &tok)
	must("POST", "/v1/inbox/messages/"+msgs[read].MessageID+"/read", tok.Token, nil, 200)
	deliveryKeys := map[string][]string{}
	for _, id := range []string{read, unread, waiting} {
		var l struct {
			Data []struct{ IdempotencyKey string }
		}
		must("GET", "/v1/deliveries?runId="+id, key, nil, 200).JSON(t, &l)
		if len(l.Data) != 2 {
			t.Fatalf("run %s: %d delivery rows, want 2", id, len(l.Data))
		}
		for _, d := range l.Data {
			deliveryKeys[id] = append(deliveryKeys[id], d.IdempotencyKey)
		}
	}

	// The two signalled runs finish after their signals' answers.
	signalled := time.Now()
	for _, id := range []string{read, unread} {
		must("POST", "/v1/events/"+id+"/signal", key, map[string]any{"event": "ack"}, 202)
	}
	for _, id := range []string{read, unread} {
		testwait.Until(t, "run "+id+" gone", func() error {
			r := h.Do("GET", "/v1/runs/"+id, key, nil)
			if r.Status != http.StatusNotFound {
				return fmt.Errorf("GET: %d %s", r.Status, r.Body)
			}
			if !strings.Contains(string(r.Body), `"run_not_found"`) {
				t.Fatalf("an expired run answers %s", r.Body)
			}
			return nil
		})
	}
	if r := h.Do("POST", "/v1/events/"+read+"/signal", key, map[string]any{"event": "ack"}); r.Status != http.StatusNotFound {
		t.Errorf("a signal to an expired run: %d %s, want 404", r.Status, r.Body)
	}
	if gone := time.Since(signalled); gone < retention {
		t.Fatalf("the runs left %v after their signals, before the retention (%v) since their end", gone, retention)
	}

	ctx := context.Background()
	history := func(subject string) int {
		t.Helper()
		evs, err := h.Log().History(ctx, subject, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}
	for _, id := range []string{read, unread} {
		if n := history(eventlog.Subject(tenant, eventlog.AggRun, id)); n != 0 {
			t.Errorf("run %s: %d events left in the log", id, n)
		}
		for _, k := range deliveryKeys[id] {
			if n := history(eventlog.Subject(tenant, eventlog.AggDelivery, k)); n != 0 {
				t.Errorf("run %s: a send's %d events left in the log", id, n)
			}
		}
		var l struct{ Data []any }
		if must("GET", "/v1/deliveries?runId="+id, key, nil, 200).JSON(t, &l); len(l.Data) != 0 {
			t.Errorf("run %s: %d delivery rows left", id, len(l.Data))
		}
	}
	for _, txn := range []string{"t-read", "t-unread"} {
		testwait.Until(t, "transaction "+txn+" gone", func() error {
			if r := h.Do("GET", "/v1/transactions/"+txn, key, nil); r.Status != http.StatusNotFound {
				return fmt.Errorf("GET: %d %s", r.Status, r.Body)
			}
			return nil
		})
		if n := history(eventlog.Subject(tenant, eventlog.AggTransaction, txn)); n != 0 {
			t.Errorf("transaction %s: %d events left in the log", txn, n)
		}
	}
	msgs = inbox()
	if _, ok := msgs[read]; ok {
		t.Error("the read in-app message of an expired run is still in the inbox")
	}
	if _, ok := msgs[unread]; !ok {
		t.Error("the unread in-app message of an expired run left the inbox")
	}
	var counts struct{ Unread int }
	must("GET", "/v1/inbox/counts", tok.Token, nil, 200).JSON(t, &counts)
	if held, err := h.Store().InboxCounts(tenant, "u1"); err != nil || counts.Unread != 2 || held.Total != 2 || len(msgs) != 2 {
		t.Errorf("inbox: %d unread, %+v held (%v), %d listed; want 2 unread of 2", counts.Unread, held, err, len(msgs))
	}

	// The waiting run is whole.
	if run := h.WaitRun(key, waiting, "waiting"); len(run["steps"].([]any)) != 3 {
		t.Errorf("the waiting run: %v", run)
	}
	if n := history(eventlog.Subject(tenant, eventlog.AggRun, waiting)); n == 0 {
		t.Error("the waiting run's events left the log")
	}
	must("GET", "/v1/transactions/t-waiting", key, nil, 200)
	for _, k := range deliveryKeys[waiting] {
		if n := history(eventlog.Subject(tenant, eventlog.AggDelivery, k)); n == 0 {
			t.Error("a send of the waiting run left the log")
		}
	}
}
