package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// The broadcasts of these tests are scaled down tenfold (broadcastScale):
// answered at once past 100 subscribers, fanned out 100 at a time. The
// same code runs as at the defaults (1,000 and 1,000), on a tenth of the
// runs; control's tests hold the default threshold.
const (
	broadcastChunk = 100
	// broadcastSize is an audience past the threshold of an answer at
	// once: three chunks.
	broadcastSize = 250
)

// broadcastScale is the services' configuration of these tests.
func broadcastScale(c *service.Config) {
	c.FanoutChunk, c.BroadcastThreshold = broadcastChunk, broadcastChunk
}

// txnProgress is GET /v1/transactions/{id}.
type txnProgress struct {
	TransactionID string
	WorkflowID    string
	Status        string
	Recipients    *int
	Runs          struct{ Started, Running, Completed, Failed, Cancelled, Digested int }
	Deliveries    struct{ Sent, Skipped, Failed int }
	CreatedAt     string
	UpdatedAt     string
}

func progress(t *testing.T, h *testherald.Herald, key, txn string) txnProgress {
	t.Helper()
	r := h.Do("GET", "/v1/transactions/"+url.PathEscape(txn), key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET transaction: %d %s", r.Status, r.Body)
	}
	var p txnProgress
	r.JSON(t, &p)
	return p
}

// sentTo counts the emails of m by recipient (the subscriber id).
func sentTo(m *testsmtp.Server) map[string]int {
	got := map[string]int{}
	for _, msg := range m.Messages() {
		got[strings.TrimSuffix(msg.To[0], "@example.com")]++
	}
	return got
}

// emailsOnce fails t unless each of ids had exactly one email and no one
// else had any.
func emailsOnce(t *testing.T, got map[string]int, ids []string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
		if got[id] != 1 {
			t.Errorf("%s: %d emails, want 1", id, got[id])
		}
	}
	for id, n := range got {
		if !want[id] {
			t.Errorf("%s: %d emails, want none", id, n)
		}
	}
}

// sentFor counts the emails of m whose subject names txn (see promo).
func sentFor(m *testsmtp.Server, txn string) int {
	n := 0
	for _, msg := range m.Messages() {
		if bytes.Contains(msg.Data, []byte("Subject: Promo "+txn+"\r\n")) {
			n++
		}
	}
	return n
}

// promo sends one email, its subject "Promo" and the payload's tag.
func promo() *bridge.Workflow {
	return bridge.MustWorkflow("promo", func(ctx *bridge.Context, p struct{ Tag string }) error {
		_, err := bridge.Send(ctx, "promo", "email", mail(strings.TrimSpace("Promo "+p.Tag)))
		return err
	})
}

// A trigger to topics of broadcastSize distinct subscribers (two topics sharing
// 200 of them) is answered 202 with no runs and the count of its
// recipients; its fan-out goes on in the background and every subscriber
// gets one email. Its progress, kept by the projector, reaches finished
// with every run completed and every email sent, and equals what the
// runs' own statuses say. GET /v1/transactions lists it newest first.
func TestBroadcastAnswersAtOnceAndCountsItsProgressE2E(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	h, m, tenant, key := flowHeraldWith(t, testherald.Options{Tune: broadcastScale})
	h.Bridge(key, bridge.NewRegistry().MustRegister(promo()))
	ids := h.SeedTopic(tenant, "all", broadcastSize, "example.com")
	h.SeedTopic(tenant, "vip", 200, "example.com")

	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "promo", "transactionId": "launch",
		"to": map[string]any{"topics": []string{"all", "vip"}}})
	if r.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	if got, want := strings.TrimSpace(string(r.Body)), fmt.Sprintf(`{"transactionId":"launch","runs":null,"recipients":%d}`, broadcastSize); got != want {
		t.Fatalf("trigger answered %s", got)
	}
	if p := progress(t, h, key, "launch"); p.Recipients == nil || *p.Recipients != broadcastSize || p.WorkflowID != "promo" {
		t.Fatalf("progress at the answer: %+v", p)
	}

	var p txnProgress
	testwait.Until(t, "the broadcast finished", func() error {
		p = progress(t, h, key, "launch")
		if p.Status != "finished" || p.Deliveries.Sent != broadcastSize {
			return fmt.Errorf("status %s, runs %+v, deliveries %+v", p.Status, p.Runs, p.Deliveries)
		}
		return nil
	})
	if p.Runs.Started != broadcastSize || p.Runs.Completed != broadcastSize || p.Runs.Running != 0 ||
		p.Runs.Failed+p.Runs.Cancelled+p.Runs.Digested != 0 || p.Deliveries.Skipped+p.Deliveries.Failed != 0 ||
		*p.Recipients != broadcastSize {
		t.Fatalf("finished with %+v", p)
	}
	byStatus := map[string]int{}
	for _, run := range listTxnRuns(t, h, key, "launch") {
		byStatus[run["status"].(string)]++
	}
	if len(byStatus) != 1 || byStatus["completed"] != p.Runs.Completed {
		t.Fatalf("runs by status %v, progress %+v", byStatus, p.Runs)
	}
	emailsOnce(t, sentTo(m), ids)

	// Newest first: a later trigger to one subscriber comes before it.
	if r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "promo", "transactionId": "later",
		"to": map[string]any{"subscriberId": "u1"}}); r.Status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	var list struct{ Data []txnProgress }
	h.Do("GET", "/v1/transactions", key, nil).JSON(t, &list)
	if len(list.Data) != 2 || list.Data[0].TransactionID != "later" || list.Data[1].TransactionID != "launch" ||
		*list.Data[0].Recipients != 1 || list.Data[1].Runs.Completed != broadcastSize {
		t.Fatalf("GET /v1/transactions: %+v", list.Data)
	}
	if r := h.Do("GET", "/v1/transactions/nope", key, nil); r.Status != http.StatusNotFound ||
		!strings.Contains(string(r.Body), "transaction_not_found") {
		t.Fatalf("unknown transaction: %d %s", r.Status, r.Body)
	}
}

// A broadcast cancelled while its background fan-out starts runs: its
// progress says cancelled, its counters equal its runs' statuses once
// every run ended (completed or cancelled, some never started a turn), the
// cancel answered at once counts them all, and no send begins more than
// 1 s after it answered.
func TestBroadcastCancelledMidFanOutE2E(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	h, m, tenant, key := flowHeraldWith(t, testherald.Options{Tune: broadcastScale})
	h.Bridge(key, bridge.NewRegistry().MustRegister(promo()))
	h.SeedTopic(tenant, "all", broadcastSize, "example.com")
	ctx := context.Background()

	txn, cancelled, answered := testherald.CancelMidFanout(t, h.Log(), h.API(key), tenant, "promo", func(txn string) func() {
		r, err := h.API(key).Send(ctx, "POST", "/v1/events", map[string]any{"workflowId": "promo",
			"to": map[string]any{"topics": []string{"all"}}, "transactionId": txn, "payload": map[string]any{"tag": txn}})
		if err != nil || r.Status != http.StatusAccepted || !strings.Contains(string(r.Body), `"runs":null`) {
			t.Fatalf("trigger: %v %d %s", err, r.Status, r.Body)
		}
		return func() {}
	})

	var p txnProgress
	var byStatus map[string]int
	var runs []map[string]any
	testwait.Until(t, "every run of the cancelled broadcast ended", func() error {
		p = progress(t, h, key, txn)
		byStatus = map[string]int{}
		runs = listTxnRuns(t, h, key, txn)
		for _, run := range runs {
			byStatus[run["status"].(string)]++
		}
		if p.Status != "cancelled" || p.Runs.Running != 0 || p.Runs.Started != len(runs) ||
			byStatus["completed"]+byStatus["cancelled"] != len(runs) {
			return fmt.Errorf("progress %s %+v; %d runs listed, by status %v", p.Status, p.Runs, len(runs), byStatus)
		}
		return nil
	})
	if p.Runs.Completed != byStatus["completed"] || p.Runs.Cancelled != byStatus["cancelled"] || p.Runs.Started != broadcastSize {
		t.Fatalf("progress %+v, runs by status %v", p.Runs, byStatus)
	}
	// The cancel answers the runs unfinished when it was recorded: every
	// run cancelled since, and those a turn under way completed.
	if p.Runs.Cancelled > cancelled || p.Runs.Cancelled == 0 {
		t.Fatalf("progress %+v, the cancel answered %d", p.Runs, cancelled)
	}
	// No send begins more than 1 s after the cancel answered (a send
	// under way then may finish): each delivery row is created as its
	// send begins. Every completed run sent its email.
	mine := map[string]bool{}
	for _, run := range runs {
		mine[run["runId"].(string)] = true
	}
	var rows struct {
		Data []struct {
			RunID     string
			CreatedAt time.Time
		}
	}
	if r := h.Do("GET", "/v1/deliveries?limit=500", key, nil); r.Status != http.StatusOK {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &rows)
	}
	late := 0
	for _, row := range rows.Data {
		if mine[row.RunID] && row.CreatedAt.After(answered.Add(time.Second)) {
			late++
		}
	}
	if late > 0 {
		t.Fatalf("%d sends began more than 1 s after the cancel answered", late)
	}
	if n := sentFor(m, txn); n < byStatus["completed"] {
		t.Fatalf("%d emails, %d runs completed", n, byStatus["completed"])
	}
}

// A broadcast whose process died mid fan-out (the first chunk's rows
// written, 60 % of its runs started, their work lost) is finished after a
// restart by the backstop the trigger armed: every subscriber gets exactly
// one email, the runs started before the crash included, and the progress
// reaches finished.
func TestBroadcastResumesAfterACrashMidFanOutE2E(t *testing.T) {
	t.Parallel() // long and self-contained: beside the other long ones
	dir := t.TempDir()
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{DataDir: dir, Tune: broadcastScale})
	tenant, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	h.Bridge(key, bridge.NewRegistry().MustRegister(promo()))
	ids := h.SeedTopic(tenant, "all", broadcastSize, "example.com")
	ctx := context.Background()

	// What the dead process left on the log.
	const txn = "crashed"
	n := broadcastSize
	txnSubject := eventlog.Subject(tenant, eventlog.AggTransaction, txn)
	recs := []eventlog.Record{
		{Subject: txnSubject, Type: events.TriggerAccepted, Tenant: tenant, Expect: true,
			Data: events.TriggerAcceptedData{TransactionID: txn, WorkflowID: "promo", Payload: []byte("{}"),
				To: events.Target{Topics: []string{"all"}}, Recipients: &n}},
		{Subject: txnSubject, Type: events.NotificationsReceived, Tenant: tenant,
			Data: events.NotificationsReceivedData{WorkflowID: "promo", SubscriberIDs: ids[:broadcastChunk]}},
	}
	for _, s := range ids[:broadcastChunk*6/10] {
		runID := engine.RunID(tenant, txn, s)
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunStarted,
			Tenant: tenant, Expect: true, MsgID: runID + ":started",
			Data: events.RunStartedData{RunID: runID, TransactionID: txn, WorkflowID: "promo", SubscriberID: &s}})
	}
	for _, rec := range recs {
		if _, err := h.Log().Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	h.Stop()

	h = testherald.Start(t, testherald.Options{DataDir: dir, Tune: broadcastScale})
	if p := progress(t, h, key, txn); p.Status != "fanning_out" || p.Runs.Started != broadcastChunk*6/10 || p.Runs.Running != broadcastChunk*6/10 {
		t.Fatalf("progress after the crash: %+v", p)
	}
	// The backstop the trigger stored before its acceptance, due while the
	// process was down.
	if err := h.Log().Schedule(ctx, eventlog.SchedSubject(tenant, "fanout", txn), eventlog.WorkFanout(tenant, txn),
		time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the resumed broadcast finished", func() error {
		p := progress(t, h, key, txn)
		if p.Status != "finished" || p.Runs.Completed != broadcastSize || p.Deliveries.Sent != broadcastSize {
			return fmt.Errorf("status %s, runs %+v, deliveries %+v", p.Status, p.Runs, p.Deliveries)
		}
		return nil
	})
	emailsOnce(t, sentTo(m), ids)
}

// A broadcast's fan-out starts its runs as the engine takes them: at no
// point are more of them started and unfinished than the bulk lane's
// FanoutAhead (four chunks), a chunk written past it, the lane's
// unacknowledged window and the tenant's turns. Unpaced, the fan-out of
// 1,000 runs is over while the first hundred run, and the check fails.
func TestABroadcastsFanoutKeepsPaceWithItsRunsE2E(t *testing.T) {
	t.Parallel()
	const n, chunk, turns = 1000, 25, 4
	h, _, tenant, key := flowHeraldWith(t, testherald.Options{Tune: func(c *service.Config) {
		c.FanoutChunk, c.BroadcastThreshold, c.TenantConcurrency = chunk, chunk, turns
	}})
	quick := bridge.MustWorkflow("quick", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "work", func(context.Context) (bool, error) { return true, nil })
		return err
	})
	h.Bridge(key, bridge.NewRegistry().MustRegister(quick))
	h.SeedTopic(tenant, "all", n, "example.com")
	if r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "quick", "to": map[string]any{"topics": []string{"all"}},
		"transactionId": "paced"}); r.Status != http.StatusAccepted {
		t.Fatalf("broadcast: %d %s", r.Status, r.Body)
	}
	const bound = 4*chunk + chunk + 2*64 + turns // FanoutAhead, a chunk, 2×bulkBatch, the turns
	most := 0
	for deadline := time.Now().Add(5 * time.Minute); ; {
		p := progress(t, h, key, "paced")
		ahead := p.Runs.Started - p.Runs.Completed - p.Runs.Failed - p.Runs.Cancelled
		most = max(most, ahead)
		if ahead > bound {
			t.Fatalf("%d runs started and unfinished (%+v), more than the %d a paced fan-out allows", ahead, p.Runs, bound)
		}
		if p.Status == "finished" {
			if p.Runs.Completed != n {
				t.Fatalf("finished with %+v, want %d completed", p.Runs, n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not finished: %+v", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("at most %d runs started and unfinished", most)
}
