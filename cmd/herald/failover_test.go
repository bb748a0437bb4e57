package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testchild"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/nats-io/nats.go"
)

// failoverRuns is the size of the fan-out the cluster loses a process and
// a node in the middle of.
const failoverRuns = 1000

// TestClusterFailoverMidFanout is the production layout losing a machine:
// two herald processes (children) on a 3-node JetStream cluster (R3), a
// fan-out of 1,000 runs (a broadcast of four chunks), and a quarter of the way through, a SIGKILL of one
// process together with the loss of the NATS node that leads the EVENTS
// stream and that the survivor is connected to (so the survivor
// reconnects, its consumers lose their node, and the stream elects, all at
// once). Every run must complete once, and the runs under way at the loss
// must not wait for the delivery lease: the dead process's work is
// offered again after AckWait, and its claimed sends are taken over when
// its presence expires (AckWait). The children's lease is 10 minutes, so
// a send taken over only by its lease would fail the 3-minute hang guard;
// the time the runs in flight took is logged (a figure, not a bound a
// loaded machine could break). A stall (a consumer that never comes
// back) fails at the hang guard.
func TestClusterFailoverMidFanout(t *testing.T) {
	// Not parallel: the heaviest of the package (three NATS nodes, two
	// children, 1,000 runs), it ran out its hang guard beside the other
	// crash tests on a loaded two-core machine; they start once it ends.
	if testing.Short() {
		t.Skip("cluster failover: 3 NATS nodes, 2 herald processes, 1,000 runs")
	}
	nc := testnats.StartCluster(t, 3)
	env := []string{"HERALD_NATS_URL=" + strings.Join(nc.URLs, ","), "HERALD_REPLICAS=3",
		"HERALD_MASTER_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
		"HERALD_ADMIN_TOKEN=hadm_failover_test_admin_token_0123456789",
		"HERALD_INTERNAL_TOKEN=hint_failover_test_internal_token_012345",
		"HERALD_ALLOW_PRIVATE_EGRESS=true", "HERALD_RATE_LIMIT=0", "HERALD_RETRY_BASE=100ms", childLeaseEnv + "=10m"}
	b := testchild.Start(t, testnet.FreeAddr(t), append(env, "HERALD_DATA_DIR="+filepath.Join(t.TempDir(), "b"))...)

	// The node that leads the EVENTS stream; the survivor connects to it
	// alone (it learns the others from it), so losing it loses them all.
	conn, err := nats.Connect(strings.Join(nc.URLs, ","), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	log, err := eventlog.Open(context.Background(), conn, eventlog.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	st, err := log.JetStream().Stream(context.Background(), eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	leader := nc.Index(st.CachedInfo().Cluster.Leader)
	if leader < 0 {
		t.Fatalf("EVENTS leader %q", st.CachedInfo().Cluster.Leader)
	}
	aEnv := append([]string{}, env...)
	aEnv[0] = "HERALD_NATS_URL=" + nc.URLs[leader]
	a := testchild.Start(t, testnet.FreeAddr(t), append(aEnv, "HERALD_DATA_DIR="+filepath.Join(t.TempDir(), "a"))...)

	mail := testsmtp.StartCatcher(t, 2*failoverRuns)
	admin := testapi.New("http://"+a.Addr, "hadm_failover_test_admin_token_0123456789")
	ta, tn := newMailTenant(t, admin, "http://"+a.Addr, "Failover", mail)
	var begunMu sync.Mutex
	begun := map[string]time.Time{} // run id → its first `work` callback
	ping := testherald.Ping(func(runID string) {
		begunMu.Lock()
		if _, ok := begun[runID]; !ok {
			begun[runID] = time.Now()
		}
		begunMu.Unlock()
	})
	testherald.ServeBridge(t, testapi.New("http://"+a.Addr, tn.APIKey), bridge.NewRegistry().MustRegister(ping))
	ta.must("POST", "/v1/sync", nil, 200)
	var recs []eventlog.Record
	for i := range failoverRuns {
		id := fmt.Sprintf("s%05d", i)
		recs = append(recs, eventlog.Record{Subject: eventlog.Subject(tn.TenantID, eventlog.AggSubscriber, id),
			Type: events.SubscriberUpserted, Tenant: tn.TenantID,
			Data: events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{"email": {id + "@example.com"}}}},
			eventlog.Record{Subject: eventlog.Subject(tn.TenantID, eventlog.AggTopic, "all"), Type: events.SubscriberSubscribed,
				Tenant: tn.TenantID, Data: events.SubscriberSubscribedData{SubscriberID: id, TopicKey: "all"}})
	}
	testnats.Append(t, log, recs)
	// Both processes hold the audience before the fan-out reads it.
	for _, p := range []string{a.Addr, b.Addr} {
		c := newAPI(t, "http://"+p, tn.APIKey)
		testwait.For(t, "the audience projected", func() bool {
			st, _ := c.do("GET", fmt.Sprintf("/v1/subscribers/s%05d", failoverRuns-1), nil)
			return st == http.StatusOK
		})
	}

	began := time.Now()
	ta.must("POST", "/v1/events", map[string]any{"workflowId": "ping", "to": map[string]any{"topics": []string{"all"}},
		"transactionId": "failover"}, http.StatusAccepted)
	testwait.For(t, "a quarter of the fan-out", func() bool { return mail.Inbox().Len() >= failoverRuns/4 })
	lost, before := time.Now(), mail.Inbox().Len()
	b.Kill()
	nc.Stop(leader)
	testwait.For(t, "every run's email", func() bool { return distinctSubjects(mail) >= failoverRuns })
	last := time.Now()

	// The figures: how long after the loss the runs begun before it (their
	// `work` callback made, through either process) had their email, and
	// the pace of the rest. Their email came at all: with a 10-minute
	// lease, through the dead process's presence expiring.
	arrived := map[string]time.Time{}
	for _, m := range mail.Inbox().Messages() {
		if at, ok := arrived[m.Subject]; !ok || m.ReceivedAt.Before(at) {
			arrived[m.Subject] = m.ReceivedAt
		}
	}
	begunMu.Lock()
	var slowest time.Duration
	var normal []time.Duration // begun to email, of the runs done before the loss
	inFlight := 0
	for run, at := range begun {
		if !at.Before(lost) {
			continue
		}
		if took := arrived[run].Sub(lost); took > slowest {
			slowest = took
		}
		if arrived[run].After(lost) {
			inFlight++
		} else {
			normal = append(normal, arrived[run].Sub(at))
		}
	}
	begunMu.Unlock()
	slices.Sort(normal)
	var pace99 time.Duration // what a run takes on this machine now
	if len(normal) > 0 {
		pace99 = normal[len(normal)*99/100]
	}
	pace := lost.Sub(began) / time.Duration(before)
	t.Logf("%d runs: %d emails %v after the trigger; then lost a process and node %s; %d runs begun and not mailed "+
		"then all had their email %v after the loss (AckWait %v; a run's p99 before the loss, %v); "+
		"the last of all %v after the loss (the %d left would take %v at the pace before)",
		failoverRuns, before, lost.Sub(began).Round(time.Millisecond), st.CachedInfo().Cluster.Leader, inFlight,
		slowest.Round(time.Millisecond), crashAckWait, pace99.Round(time.Millisecond), last.Sub(lost).Round(time.Millisecond),
		failoverRuns-before, (pace * time.Duration(failoverRuns-before)).Round(time.Millisecond))
	if inFlight == 0 {
		t.Fatal("no run was in flight at the loss: the test shows nothing")
	}

	// Once: one RunCompleted per run in the log. A run records its
	// completion after its email arrived: wait for the last ones.
	var completed map[string]int
	testwait.For(t, "every run's completion", func() bool {
		completed = map[string]int{}
		err := log.Replay(context.Background(), eventlog.Filter{Tenant: tn.TenantID, Types: []string{events.RunCompleted}},
			func(ev eventlog.Event) error { completed[ev.Subject]++; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(completed) < failoverRuns {
			time.Sleep(200 * time.Millisecond)
			return false
		}
		return true
	})
	for subject, n := range completed {
		if n != 1 {
			t.Errorf("%s: %d RunCompleted events", subject, n)
		}
	}
	if len(completed) != failoverRuns {
		t.Errorf("%d runs completed, want %d", len(completed), failoverRuns)
	}
	// One send per run: a send the dead process handed to SMTP and had
	// not recorded is sent again, with the same Message-ID
	// (docs/operations.md), a copy and not a second send.
	sends := testsmtp.CountSends(t, mail.Inbox().Messages(), testsmtp.BySubject)
	if copies := sends.Once(t, sends.Keys()); copies > 0 {
		t.Logf("%d emails sent twice, with the same Message-ID, by the process killed mid-send", copies)
	}
}

// distinctSubjects counts the runs that got an email (the subject is the
// run's id).
func distinctSubjects(c *testsmtp.Catcher) int {
	seen := map[string]bool{}
	for _, m := range c.Inbox().Messages() {
		seen[m.Subject] = true
	}
	return len(seen)
}
