package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// Two herald processes on one NATS, their broadcasts scaled down tenfold
// (fanned out 100 at a time, answered at once past 100): process A takes
// a trigger to 500 subscribers (five chunks of its fan-out), process B
// the cancel of its transaction as soon as A's first chunk is under way,
// and the try counts once a later chunk began after the cancel. The count B
// answers (at once: a broadcast) is at least the transaction's cancelled
// runs, every run ends completed
// or cancelled, and no run that A's fan-out started after the cancel
// ever calls the Bridge or sends.
func TestCancelTransactionAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("two herald processes, 500 runs")
	}
	t.Parallel() // long, and on servers of its own: beside the other long ones
	const n = 500
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	scale := func(c *service.Config) { c.FanoutChunk, c.BroadcastThreshold = 100, 100 }
	a := startProcess(t, []string{srv.ClientURL()}, 1, scale)
	b := startProcess(t, []string{srv.ClientURL()}, 1, scale)
	mail := testsmtp.Start(t, testsmtp.Options{})

	admin := clusterEnv()("HERALD_ADMIN_TOKEN")
	tn, err := testapi.New(a.URL(), admin).CreateTenant(context.Background(), "Cancel")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, b.URL(), "POST", "/v1/channels", tn.APIKey, map[string]any{"channelKey": "email-smtp",
		"config": map[string]any{"host": "127.0.0.1", "port": mail.Port, "fromEmail": "noreply@herald.test"}}, 201)
	var mu sync.Mutex
	called := map[string]bool{}
	promo := bridge.MustWorkflow("promo", func(ctx *bridge.Context, _ any) error {
		mu.Lock()
		called[ctx.RunID] = true
		mu.Unlock()
		_, err := bridge.Send(ctx, "promo", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: ctx.RunID, Body: "b"}, nil
		})
		return err
	})
	reg := bridge.NewRegistry().MustRegister(promo)
	testherald.ServeBridge(t, testapi.New(a.URL(), tn.APIKey), reg)
	var recs []eventlog.Record
	for i := range n {
		id := fmt.Sprintf("u%04d", i)
		recs = append(recs, testnats.Subscriber(tn.TenantID, id),
			eventlog.Record{Subject: eventlog.Subject(tn.TenantID, eventlog.AggTopic, "all"), Type: events.SubscriberSubscribed,
				Tenant: tn.TenantID, Data: events.SubscriberSubscribedData{SubscriberID: id, TopicKey: "all"}})
	}
	testnats.Append(t, a.Log(), recs)

	// A's fan-out is under way (its first chunk received) when B takes
	// the cancel.
	txn, cancelled, _ := testherald.CancelBeforeAChunk(t, b.Log(), testapi.New(b.URL(), tn.APIKey), tn.TenantID, "promo", func(txn string) func() {
		done := make(chan error, 1)
		go func() {
			_, _, err := call(a.URL(), "POST", "/v1/events", tn.APIKey, map[string]any{"workflowId": "promo",
				"to": map[string]any{"topics": []string{"all"}}, "transactionId": txn})
			done <- err
		}()
		return func() {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})

	// Every run ends, read from the log itself.
	status := map[string]int{}
	startedCancelled := map[string]bool{}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		runID := engine.RunID(tn.TenantID, txn, fmt.Sprintf("u%04d", i))
		var last eventlog.Event
		testwait.Until(t, "run "+runID+" to end", func() error {
			evs, err := a.Log().History(ctx, eventlog.Subject(tn.TenantID, eventlog.AggRun, runID), 0)
			if err != nil {
				return err // a read that timed out on a loaded machine: again
			}
			if last = evs[len(evs)-1]; last.Type != events.RunCompleted && last.Type != events.RunCancelled && last.Type != events.RunFailed {
				return fmt.Errorf("its last event is %s", last.Type)
			}
			return nil
		})
		status[last.Type]++
		var d events.RunCancelledData
		if last.Type == events.RunCancelled && last.Decode(&d) == nil && d.AtStart {
			startedCancelled[runID] = true
		}
	}
	// A broadcast's cancel answers the runs unfinished when it was
	// recorded: every run cancelled since, and those a turn under way
	// completed.
	if status[events.RunCompleted]+status[events.RunCancelled] != n || status[events.RunCancelled] > cancelled {
		t.Fatalf("runs ended %v; the cancel answered %d", status, cancelled)
	}
	time.Sleep(time.Second) // a late send would show now
	mu.Lock()
	defer mu.Unlock()
	for runID := range startedCancelled {
		if called[runID] {
			t.Fatalf("run %s started cancelled, yet called the Bridge", runID)
		}
	}
	sentTo := map[string]int{}
	for _, m := range mail.Messages() {
		sentTo[subjectOf(m.Data)]++
	}
	for runID, k := range sentTo {
		if k != 1 || startedCancelled[runID] {
			t.Fatalf("run %s: %d emails (started cancelled: %v)", runID, k, startedCancelled[runID])
		}
	}
	if len(sentTo) < status[events.RunCompleted] {
		t.Fatalf("%d runs sent, %d completed", len(sentTo), status[events.RunCompleted])
	}
	t.Logf("the cancel answered %d; runs %v; %d started cancelled; %d emails", cancelled, status, len(startedCancelled), len(sentTo))
	if len(startedCancelled) == 0 {
		t.Fatal("no run started cancelled: the cancel did not reach the fan-out under way in the other process")
	}
}

// subjectOf returns the Subject header of a raw message.
func subjectOf(data []byte) string {
	for _, line := range strings.Split(string(data), "\r\n") {
		if s, ok := strings.CutPrefix(line, "Subject: "); ok {
			return s
		}
	}
	return ""
}
