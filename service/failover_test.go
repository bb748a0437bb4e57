package service_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestSurvivorKeepsWorkingAcrossTheLossOfItsNATSNode stops the NATS node a
// herald process is connected to, ten times in a row (restarting it in
// between), and each time checks that the process goes on: its
// projections follow the log again and new triggers complete. The nodes
// are stopped with work in flight, so every consumer of the process (the
// projector's ordered tail, the engine's work consumers) loses its server.
func TestSurvivorKeepsWorkingAcrossTheLossOfItsNATSNode(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: 3 NATS nodes, ten node losses")
	}
	t.Parallel() // long, and on servers of its own: beside the other long ones
	const rounds, perRound = 10, 20
	nc := testnats.StartCluster(t, 3)
	a := startHerald(t, nc.URLs)
	mail := testsmtp.StartCatcher(t, rounds*perRound*2)
	admin := clusterEnv()("HERALD_ADMIN_TOKEN")
	tn, err := testapi.New(a.URL(), admin).CreateTenant(context.Background(), "Failover")
	if err != nil {
		t.Fatal(err)
	}
	mustCall(t, a.URL(), "POST", "/v1/channels", tn.APIKey, map[string]any{"channelKey": "email-smtp",
		"config": map[string]any{"host": mail.Host, "port": mail.Port, "fromEmail": "noreply@herald.test"}}, 201)
	testherald.ServeBridge(t, testapi.New(a.URL(), tn.APIKey), bridge.NewRegistry().MustRegister(testherald.Ping(nil)))
	mustCall(t, a.URL(), "POST", "/v1/sync", tn.APIKey, nil, 200)
	var recs []eventlog.Record
	for i := range perRound {
		id := fmt.Sprintf("u%02d", i)
		recs = append(recs, testnats.Subscriber(tn.TenantID, id))
	}
	testnats.Append(t, a.Log(), recs)

	trigger := func(round, i int) {
		body := map[string]any{"workflowId": "ping", "to": map[string]any{"subscriberId": fmt.Sprintf("u%02d", i)},
			"transactionId": fmt.Sprintf("txn-%02d-%02d", round, i)}
		// A call refused while the cluster elects is retried, as a client
		// would; the bound guards against a hang only.
		testwait.Until(t, fmt.Sprintf("round %d trigger %d accepted", round, i), func() error {
			st, data, err := call(a.URL(), "POST", "/v1/events", tn.APIKey, body)
			if err == nil && st != http.StatusAccepted {
				err = fmt.Errorf("%d %s", st, data)
			}
			return err
		})
	}
	for round := range rounds {
		name := a.Log().JetStream().Conn().ConnectedServerName()
		node := nc.Index(name)
		if node < 0 {
			t.Fatalf("round %d: connected to unknown node %q", round, name)
		}
		// Work in flight when the node goes: half the triggers before.
		for i := range perRound / 2 {
			trigger(round, i)
		}
		lost := time.Now()
		nc.Stop(node)
		for i := perRound / 2; i < perRound; i++ {
			trigger(round, i)
		}
		accepted := time.Since(lost)
		want := (round + 1) * perRound
		deadline := time.Now().Add(2 * time.Minute) // a stall, not a slow machine
		for mailed(t, mail) < want {
			if time.Now().After(deadline) {
				last, _ := a.Log().LastSeq(context.Background())
				t.Fatalf("round %d (node %s lost): %d of %d runs mailed after %v; projections at #%d of #%d; ready %v",
					round, name, mailed(t, mail), want, time.Since(lost), a.Store().Applied(), last, a.Ready())
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("round %d: node %s lost; triggers accepted %v later, %d runs done %v later", round, name,
			accepted.Round(time.Millisecond), perRound, time.Since(lost).Round(time.Millisecond))
		nc.Start(node)
		nc.WaitReady(time.Minute)
		nc.WaitStreamsCurrent(a.Log().JetStream(), 2*time.Minute)
	}
	// One send per run: a send whose outcome the process could not record
	// while its node was down may be sent again, with the same Message-ID.
	sends := testsmtp.CountSends(t, mail.Inbox().Messages(), testsmtp.BySubject)
	if copies := sends.Once(t, sends.Keys()); copies > 0 {
		t.Logf("%d sends arrived twice, with the same Message-ID", copies)
	}
	if n := len(sends.Keys()); n != rounds*perRound {
		t.Fatalf("%d runs mailed, want %d", n, rounds*perRound)
	}
}

// mailed is how many runs got an email at mail (the subject is the run's
// id), copies of one send counted once.
func mailed(t *testing.T, mail *testsmtp.Catcher) int {
	return len(testsmtp.CountSends(t, mail.Inbox().Messages(), testsmtp.BySubject).Keys())
}
