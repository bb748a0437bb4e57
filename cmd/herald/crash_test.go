package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/devmail"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testchild"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/service"
)

// The crash tests run `herald serve` as a child process (this test binary,
// re-executed by testchild) and kill it with SIGKILL. The child has a short
// fan-out backstop and ack wait, so interrupted work is taken over seconds
// after the restart.
func TestMain(m *testing.M) {
	testchild.Main(m, func(cfg *service.Config) {
		cfg.FanoutBackstop = crashBackstop
		cfg.AckWait = crashAckWait
		// Broadcasts from 400 recipients, fanned out 250 at a time: the
		// crash and failover tests interrupt a broadcast of several chunks
		// with 1,000 runs, not the 2,000 the defaults would need.
		cfg.BroadcastThreshold, cfg.FanoutChunk = crashBroadcastFrom-1, crashFanoutChunk
		if d, err := time.ParseDuration(os.Getenv(childLeaseEnv)); err == nil {
			cfg.DeliveryLease = d
		}
	})
}

// childLeaseEnv sets a child's delivery lease (a duration), for a test
// that must tell a send taken over because its process is known dead
// from one taken over because its lease ran out.
const childLeaseEnv = "HERALD_TEST_DELIVERY_LEASE"

const (
	// crashBroadcastFrom is the smallest audience a child answers as a
	// broadcast (202, runs null, fanned out in the background), and
	// crashFanoutChunk the runs it starts at once.
	crashBroadcastFrom = 400
	crashFanoutChunk   = 250
	crashBackstop      = 2 * time.Second
	crashAckWait       = 3 * time.Second
	// stallBound bounds, after the restart that follows a kill mid
	// fan-out, how long the work may make no progress at all: the fan-out
	// is taken over within FanoutBackstop, the runs the dead process held
	// are offered again within AckWait (both 3 s or less). Twice AckWait
	// is ten times the longest pause seen on a 2-core machine at a load
	// average of 30, and less than the defaults (AckWait 15 s,
	// FanoutBackstop 20 s) that a child ignoring its settings would wait.
	// How long the 1,000 runs take is their pace on the machine, not
	// bounded.
	stallBound = 2 * crashAckWait
	// hangGuard only ends a crash test that would otherwise hang: its
	// work is waited for as long as it makes progress, at whatever pace
	// the machine allows (AckWait for the work the dead process held,
	// then the runs at their pace), since load on a shared machine
	// stretches both. Work the service lost at the kill (a run left
	// unfinished for good, a trigger accepted without a run) never
	// finishes: the test fails at the guard, naming it, as it does when
	// a trigger never gets an answer.
	hangGuard = 3 * time.Minute
)

func startChild(t *testing.T, dataDir, addr string) *testchild.Proc {
	t.Helper()
	// The audience is set up by 16 clients of one tenant as fast as they
	// go: no per-tenant rate limit.
	return testchild.Start(t, addr, "HERALD_DATA_DIR="+dataDir, "HERALD_RETRY_BASE=100ms", "HERALD_RATE_LIMIT=0")
}

// api is the tenant's (or the admin's) client of the child's API.
type api struct {
	t *testing.T
	c *testapi.Client
}

func newAPI(t *testing.T, base, key string) api {
	c := testapi.New(base, key)
	c.HTTP = http.DefaultClient
	return api{t: t, c: c}
}

// childAdmin is the admin's client of the child serving addr from
// dataDir, where it wrote its admin token.
func childAdmin(t *testing.T, dataDir, addr string) *testapi.Client {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(dataDir, service.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return newAPI(t, "http://"+addr, strings.TrimSpace(string(token))).c
}

// newMailTenant creates the tenant name through admin, gives it an
// email-smtp channel to mail, and returns its client of the API at base.
func newMailTenant(t *testing.T, admin *testapi.Client, base, name string, mail *testsmtp.Catcher) (api, testapi.Tenant) {
	t.Helper()
	tn, err := admin.CreateTenant(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, base, tn.APIKey)
	a.must("POST", "/v1/channels", map[string]any{"channelKey": "email-smtp",
		"config": map[string]any{"host": mail.Host, "port": mail.Port, "fromEmail": "noreply@herald.test"}}, 201)
	return a, tn
}

// do sends a request; status 0 is no answer (the child was killed).
func (a api) do(method, path string, body any) (int, []byte) {
	a.t.Helper()
	r, err := a.c.Send(context.Background(), method, path, body)
	if err != nil {
		return 0, []byte(err.Error())
	}
	return r.Status, r.Body
}

func (a api) must(method, path string, body any, want ...int) []byte {
	a.t.Helper()
	st, data := a.do(method, path, body)
	for _, w := range want {
		if st == w {
			return data
		}
	}
	a.t.Fatalf("%s %s: %d %s", method, path, st, data)
	return nil
}

// crashWorld is a tenant with a Bridge, an SMTP channel and an audience,
// served by a child process that the test kills and restarts.
type crashWorld struct {
	t       *testing.T
	dataDir string
	addr    string
	child   *testchild.Proc
	api     api
	calls   sync.Map // runId → *atomic.Int32 (executions of the `work` callback)
	inbox   *devmail.Inbox
	// progress is every callback of the Bridge (a run's `work` or its
	// message's content), in order.
	progressMu sync.Mutex
	progress   []progressMark
}

// progressMark is a callback of the Bridge for a run (its `work`, or
// its message's content: sent), and when it ran.
type progressMark struct {
	run  string
	sent bool
	at   time.Time
}

func (w *crashWorld) mark(runID string, sent bool) {
	w.progressMu.Lock()
	defer w.progressMu.Unlock()
	w.progress = append(w.progress, progressMark{runID, sent, time.Now()})
}

// unfinished returns the runs that did their `work` but had not reached
// their message yet.
func (w *crashWorld) unfinished() []string {
	w.progressMu.Lock()
	defer w.progressMu.Unlock()
	sent := map[string]bool{}
	for _, m := range w.progress {
		sent[m.run] = sent[m.run] || m.sent
	}
	var out []string
	for run, s := range sent {
		if !s {
			out = append(out, run)
		}
	}
	return out
}

// recovery reads the callbacks from since on: the longest time without
// one (since counting as one), and for each of runs, how many runs had
// sent their message when it first came back after since (missing: it
// never came back).
func (w *crashWorld) recovery(since time.Time, runs []string) (stall time.Duration, doneBefore map[string]int) {
	w.progressMu.Lock()
	defer w.progressMu.Unlock()
	doneBefore = map[string]int{}
	want := map[string]bool{}
	for _, r := range runs {
		want[r] = true
	}
	sent := map[string]bool{}
	last := since
	for _, m := range w.progress {
		if !m.at.Before(since) {
			stall = max(stall, m.at.Sub(last))
			last = m.at
			if _, ok := doneBefore[m.run]; want[m.run] && !ok {
				doneBefore[m.run] = len(sent)
			}
		}
		if m.sent {
			sent[m.run] = true
		}
	}
	return stall, doneBefore
}

func newCrashWorld(t *testing.T) *crashWorld {
	w := &crashWorld{t: t, dataDir: t.TempDir(), addr: testnet.FreeAddr(t)}
	w.child = startChild(t, w.dataDir, w.addr)
	// The SMTP sink.
	mail := testsmtp.StartCatcher(t, 100000)
	w.inbox = mail.Inbox()
	w.api, _ = newMailTenant(t, childAdmin(t, w.dataDir, w.addr), "http://"+w.addr, "Crash", mail)
	// The Bridge: `work` counts executions per run, then a delay, then a send.
	count := func(runID string) {
		w.mark(runID, false)
		v, _ := w.calls.LoadOrStore(runID, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}
	wf := func(delay time.Duration) func(*bridge.Context, any) error {
		return func(ctx *bridge.Context, _ any) error {
			if _, err := bridge.Run(ctx, "work", func(context.Context) (bool, error) { count(ctx.RunID); return true, nil }); err != nil {
				return err
			}
			if delay > 0 {
				if err := bridge.Delay(ctx, "pause", delay); err != nil {
					return err
				}
			}
			_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
				w.mark(ctx.RunID, true)
				return bridge.SendContent{Subject: ctx.RunID, Body: "hello " + ctx.Subscriber.SubscriberID}, nil
			})
			return err
		}
	}
	reg := bridge.NewRegistry().MustRegister(bridge.MustWorkflow("quick", wf(0)), bridge.MustWorkflow("sleepy", wf(8*time.Second)))
	var handler atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	b, err := w.api.c.BindBridge(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	handler.Store(bridge.Serve(reg, bridge.Options{SigningKey: b.SigningSecret}))
	return w
}

func (w *crashWorld) audience(topic, prefix string, n int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := fmt.Sprintf("%s%05d", prefix, i)
			w.api.must("PUT", "/v1/subscribers/"+id, map[string]any{"contacts": map[string]any{"email": []string{id + "@example.com"}}}, 200, 201)
			w.api.must("PUT", "/v1/subscribers/"+id+"/subscriptions/"+topic, nil, 200, 201)
		}()
	}
	wg.Wait()
}

func (w *crashWorld) restart() {
	w.child.Kill()
	w.child = startChild(w.t, w.dataDir, w.addr)
}

// runsOf lists a transaction's runs with their status.
func (w *crashWorld) runsOf(txn string) map[string]string {
	w.t.Helper()
	runs, err := testapi.All[struct{ RunID, Status string }](context.Background(), w.api.c,
		"/v1/runs?limit=500&transactionId="+txn)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range runs {
		out[r.RunID] = r.Status
	}
	return out
}

// waitAll waits until the n runs of txn all have status, and returns them.
// It is bounded only against a hang: how long the runs take is the
// machine's pace.
func (w *crashWorld) waitAll(txn string, n int, status string) map[string]string {
	deadline := time.Now().Add(hangGuard)
	for {
		runs := w.runsOf(txn)
		done := 0
		for _, s := range runs {
			if s == status {
				done++
			}
		}
		if len(runs) == n && done == n {
			return runs
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%d of %d runs %s after %v (%d runs known): %v", done, n, status, hangGuard, len(runs), histogram(runs))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// histogram counts runs by status.
func histogram(runs map[string]string) map[string]int {
	h := map[string]int{}
	for _, s := range runs {
		h[s]++
	}
	return h
}

// checkExactlyOnce: every run completed, its `work` callback ran (at least
// once; a kill mid step may run it again, at most once more), and its
// subscriber received exactly one send: one Message-ID, of which a send
// the kill caught between the server's acceptance and its record may have
// brought a second copy.
func (w *crashWorld) checkExactlyOnce(runs map[string]string) {
	w.t.Helper()
	copies := testsmtp.CountSends(w.t, w.inbox.Messages(), testsmtp.BySubject).Once(w.t, slices.Collect(maps.Keys(runs)))
	again := 0
	for runID := range runs {
		v, ok := w.calls.Load(runID)
		switch n := int32(0); {
		case !ok:
			w.t.Errorf("run %s: callback never ran", runID)
		default:
			n = v.(*atomic.Int32).Load()
			if n > 2 {
				w.t.Errorf("run %s: callback ran %d times", runID, n)
			}
			if n == 2 {
				again++
			}
		}
	}
	w.t.Logf("%d runs completed, %d messages (%d a second copy of a send taken over), %d callbacks re-run after the kill",
		len(runs), w.inbox.Len(), copies, again)
}

func TestCrashMidFanoutAndWhileSleeping(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts child processes")
	}
	t.Parallel() // beside the quiet-hours crash test, which mostly waits
	w := newCrashWorld(t)
	began := time.Now()
	w.audience("big", "f", 1000)
	w.audience("nap", "s", 300)
	t.Logf("audience of 1,300 set up in %v", time.Since(began))

	// 1. Kill mid fan-out: as soon as the Bridge sees the first run.
	// 1,000 recipients make a broadcast of four chunks: the trigger is answered once it
	// is durable (202, runs null), or not at all when the kill comes
	// first; the fan-out goes on in the background either way.
	type answer struct {
		status int
		body   []byte
	}
	done := make(chan answer, 1)
	go func() {
		status, body := w.api.do("POST", "/v1/events", map[string]any{"workflowId": "quick",
			"to": map[string]any{"topics": []string{"big"}}, "transactionId": "crash-fanout"})
		done <- answer{status, body}
	}()
	// Polled every millisecond, not at testwait's pace: the kill must
	// come while the fan-out is under way.
	deadline := time.Now().Add(hangGuard)
	for {
		n := 0
		w.calls.Range(func(any, any) bool { n++; return n < 1 })
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no run started")
		}
		time.Sleep(time.Millisecond)
	}
	w.child.Kill()
	restarted := time.Now()
	// The runs the dead process had started and not finished: their work
	// messages come back after AckWait.
	held := w.unfinished()
	w.child = startChild(t, w.dataDir, w.addr)
	readyAt := time.Now()
	ready := readyAt.Sub(restarted)
	switch a := <-done; a.status {
	case 0: // killed before the answer
	case 202:
		var res struct {
			Runs       *[]any
			Recipients int
		}
		if err := json.Unmarshal(a.body, &res); err != nil || res.Runs != nil || res.Recipients != 1000 {
			t.Fatalf("the broadcast answered %s", a.body)
		}
	default:
		t.Fatalf("the trigger answered %d %s", a.status, a.body)
	}
	runs := w.waitAll("crash-fanout", 1000, "completed")
	recovery := time.Since(restarted)
	w.checkExactlyOnce(runs)
	// The work comes back within AckWait, not on a longer timeout: once
	// the child is ready, no time without progress is longer than
	// stallBound, up to the last run (the runs the dead process held are
	// among them: checkExactlyOnce saw each complete, exactly once). That is a wait on a
	// timeout, which load does not lengthen. A child that waited on the
	// default FanoutBackstop would make no progress for about 20 s after
	// the restart; one that waited on the default AckWait would finish the
	// fan-out and then wait for the held runs, on any machine that does
	// the 1,000 runs in less than that (about 8 s, as any not overloaded
	// one does). When the held runs come back, in runs done meanwhile, is
	// logged: their messages return after AckWait and then queue behind
	// the tenant's backlog, so that depends on the machine's pace.
	stall, doneBefore := w.recovery(readyAt, held)
	t.Logf("recovery: the interrupted fan-out's 1,000 runs were done %v after the restart (the child was ready after %v); once it was ready, the longest time without progress was %v; the %d runs the dead process held came back when %v runs were done",
		recovery.Round(10*time.Millisecond), ready.Round(10*time.Millisecond), stall.Round(10*time.Millisecond), len(held), slices.Sorted(maps.Values(doneBefore)))
	if stall > stallBound {
		t.Errorf("no run progressed for %v once the child was ready, more than %v (2 × AckWait): work of a killed process must come back within AckWait",
			stall.Round(10*time.Millisecond), stallBound)
	}

	// 2. Kill while 300 runs sleep (a trigger answered with its runs).
	w.inbox.Clear()
	w.api.must("POST", "/v1/events", map[string]any{"workflowId": "sleepy",
		"to": map[string]any{"topics": []string{"nap"}}, "transactionId": "crash-sleep"}, 202)
	sleeping := w.waitAll("crash-sleep", 300, "sleeping")
	// When each run's delay ends, as its RunSleeping recorded before the
	// kill.
	wakes := map[string]time.Time{}
	for runID := range sleeping {
		var evs struct {
			Data []struct {
				Type string
				Data struct{ Until time.Time }
			}
		}
		if _, err := w.api.c.Do(t.Context(), "GET", "/v1/runs/"+runID+"/events", nil, &evs); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Data {
			if ev.Type == events.RunSleeping {
				wakes[runID] = ev.Data.Until
			}
		}
		if wakes[runID].IsZero() {
			t.Fatalf("sleeping run %s: no RunSleeping in %+v", runID, evs)
		}
	}
	slept := time.Now()
	w.restart()
	runs = w.waitAll("crash-sleep", 300, "completed")
	t.Logf("sleeping runs completed %v after the kill", time.Since(slept))
	// No delay was cut short by the restart: each run's mail went out
	// after its own delay's recorded end.
	for _, m := range w.inbox.Messages() {
		if wake, ok := wakes[m.Subject]; ok && m.ReceivedAt.Before(wake) {
			t.Fatalf("run %s mailed at %v, before its delay ended at %v", m.Subject, m.ReceivedAt, wake)
		}
	}
	w.checkExactlyOnce(runs)
}

// singleTrigger is one single-subscriber trigger of the crash test: its
// subscriber (its own) and transaction, and its answer.
type singleTrigger struct {
	sub, txn string
	// status is the answer's status; 0: no answer (the child was killed).
	status int
	runID  string
}

// TestCrashDuringSingleSubscriberTriggers kills the child while 16 clients
// send single-subscriber triggers, each to a subscriber of its own, and
// restarts it. Every trigger answered is delivered exactly once; every
// trigger left unanswered was either never accepted (no ingress row, no
// run, no message) or is finished by the service (its run completed, one
// message). Then the clients send the unanswered triggers again with the same
// transactionId, as a client does after an error: each is answered, and
// every subscriber has exactly one message.
func TestCrashDuringSingleSubscriberTriggers(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts child processes")
	}
	t.Parallel() // beside the other crash tests: each mostly waits on its child
	const (
		clients  = 16
		triggers = 1000
		// answeredBeforeKill: the kill comes once this many triggers were
		// answered, with the runs of many still under way and most
		// triggers yet to be sent.
		answeredBeforeKill = 200
	)
	w := newCrashWorld(t)
	ctx := context.Background()
	for from := 0; from < triggers; from += 1000 {
		var items []map[string]any
		for i := from; i < from+1000; i++ {
			sub := fmt.Sprintf("one%05d", i)
			items = append(items, map[string]any{"subscriberId": sub, "contacts": map[string]any{"email": []string{sub + "@example.com"}}})
		}
		w.api.must("POST", "/v1/subscribers/bulk", map[string]any{"subscribers": items}, 200)
	}
	trigger := func(tr *singleTrigger) {
		status, body := w.api.do("POST", "/v1/events", map[string]any{"workflowId": "quick",
			"to": map[string]any{"subscriberId": tr.sub}, "transactionId": tr.txn})
		tr.status = status
		if status == 503 {
			// busy: the trigger was not accepted within its bound (a
			// third of AckWait, one second here) on a loaded machine.
			// Accepted or not, a client repeats it with the same
			// transactionId, as the answer asks.
			t.Logf("trigger %s answered busy: repeated (%s)", tr.txn, body)
		}
		if status != 202 {
			return
		}
		var res struct {
			Runs []struct{ RunID, SubscriberID, Status string }
		}
		if err := json.Unmarshal(body, &res); err != nil || len(res.Runs) != 1 || res.Runs[0].Status != "dispatched" || res.Runs[0].SubscriberID != tr.sub {
			t.Errorf("trigger %s answered %s", tr.txn, body)
			return
		}
		tr.runID = res.Runs[0].RunID
	}
	// send triggers until the answer is not busy (503), or there is none
	// (the child was killed: status 0).
	send := func(tr *singleTrigger) {
		deadline := time.Now().Add(hangGuard)
		for trigger(tr); tr.status == 503 && time.Now().Before(deadline); trigger(tr) {
			time.Sleep(time.Second) // its Retry-After
		}
	}

	// 1. Kill while triggers are in flight.
	all := make([]singleTrigger, triggers)
	var next, answered atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= triggers {
					return
				}
				tr := &all[i]
				tr.sub, tr.txn = fmt.Sprintf("one%05d", i), fmt.Sprintf("single-%05d", i)
				send(tr)
				switch tr.status {
				case 0:
					return // the child is gone
				case 202:
					answered.Add(1)
				default:
					t.Errorf("trigger %s: %d", tr.txn, tr.status)
					return
				}
			}
		})
	}
	deadline := time.Now().Add(hangGuard)
	for answered.Load() < answeredBeforeKill {
		if time.Now().After(deadline) {
			t.Fatalf("%d triggers answered in %v", answered.Load(), hangGuard)
		}
		time.Sleep(time.Millisecond)
	}
	w.child.Kill()
	wg.Wait()
	restarted := time.Now()
	w.child = startChild(t, w.dataDir, w.addr)
	sent := all[:min(int(next.Load()), triggers)]
	var unanswered []*singleTrigger
	for i := range sent {
		if sent[i].status == 0 {
			unanswered = append(unanswered, &sent[i])
		}
	}
	if len(unanswered) == 0 || len(unanswered) == len(sent) {
		t.Fatalf("%d of %d triggers unanswered: the kill did not come while triggers were in flight", len(unanswered), len(sent))
	}
	t.Logf("killed with %d triggers answered and %d in flight", len(sent)-len(unanswered), len(unanswered))

	// 2. After the restart: the answered ones are finished, the unanswered
	// ones finished or never accepted. A trigger sent now, once done,
	// shows that the projections hold every event written before the
	// kill.
	w.api.must("PUT", "/v1/subscribers/fence", map[string]any{"contacts": map[string]any{"email": []string{"fence@example.com"}}}, 200, 201)
	fence := singleTrigger{sub: "fence", txn: "fence"}
	send(&fence)
	if fence.status != 202 {
		t.Fatalf("a trigger after the restart: %d", fence.status)
	}
	sendsTo := func() testsmtp.Sends {
		return testsmtp.CountSends(t, w.inbox.Messages(), func(m devmail.Message) string {
			return strings.TrimSuffix(testsmtp.ByRecipient(m), "@example.com")
		})
	}
	var pending []string
	for {
		runs, err := testapi.All[struct{ RunID, Status, TransactionID string }](ctx, w.api.c, "/v1/runs?limit=500")
		if err != nil {
			t.Fatal(err)
		}
		status := map[string]string{}
		for _, r := range runs {
			status[r.RunID] = r.Status
		}
		pending = pending[:0]
		if status[fence.runID] != "completed" {
			pending = append(pending, "fence: "+status[fence.runID])
		}
		for i := range sent {
			tr := &sent[i]
			switch {
			case tr.status == 202 && status[tr.runID] != "completed":
				pending = append(pending, fmt.Sprintf("%s answered, run %s %q", tr.txn, tr.runID, status[tr.runID]))
			case tr.status == 0:
				rows, err := testapi.All[struct{ Status, RunID string }](ctx, w.api.c, "/v1/notifications?transactionId="+tr.txn)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) > 0 && (rows[0].RunID == "" || status[rows[0].RunID] != "completed") {
					pending = append(pending, fmt.Sprintf("%s unanswered, accepted: %+v, run %q", tr.txn, rows, status[rows[0].RunID]))
				}
				if len(rows) > 0 {
					tr.runID = rows[0].RunID
				}
			}
		}
		if len(pending) == 0 {
			break
		}
		if time.Since(restarted) > hangGuard {
			t.Fatalf("%v after the restart, %d triggers not finished, e.g. %v",
				time.Since(restarted).Round(time.Millisecond), len(pending), pending[:min(len(pending), 5)])
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("every trigger finished %v after the restart", time.Since(restarted).Round(10*time.Millisecond))
	time.Sleep(time.Second) // a duplicate send, were there one, would arrive now
	// messages checks each subscriber's sends: one per trigger answered or
	// finished, none for a trigger never accepted. A send the killed
	// process handed to the server and did not record is taken over and
	// sent again (docs/operations.md): a second copy, with the same
	// Message-ID, and the ledger shows the attempt replaced
	// (lease_expired).
	taken := 0
	messages := func(stage string) {
		got := sendsTo()
		for _, tr := range sent {
			want := 1
			if tr.status == 0 && tr.runID == "" {
				want = 0 // never accepted
			}
			if n := got.Of(tr.sub); n != want {
				t.Errorf("%s: %s (answered %d, run %q): %d sends (distinct Message-IDs), want %d", stage, tr.sub, tr.status, tr.runID, n, want)
				continue
			}
			if got.CopiesOf(tr.sub) == 0 {
				continue
			}
			rows, err := testapi.All[struct {
				Status string
				Error  struct{ Code string }
			}](ctx, w.api.c, "/v1/deliveries?runId="+tr.runID)
			if err != nil {
				t.Fatal(err)
			}
			replaced := false
			for _, r := range rows {
				replaced = replaced || r.Error.Code == "lease_expired"
			}
			if !replaced {
				t.Errorf("%s: %s (run %q): %d copies of its send, and no attempt replaced in its ledger: %+v", stage, tr.sub, tr.runID, got.CopiesOf(tr.sub)+1, rows)
				continue
			}
			taken++
		}
	}
	messages("after the restart")
	finished := 0
	for _, tr := range sent {
		if tr.status == 0 && tr.runID != "" {
			finished++
		}
	}
	t.Logf("%d sends the killed process made without recording them were made again, with the same Message-ID", taken)
	t.Logf("of the %d triggers in flight, %d were finished by the service, %d never accepted", len(unanswered), finished, len(unanswered)-finished)

	// 3. The clients send the unanswered triggers again: each is answered
	// with the run the service finished, or a run of its own.
	for _, tr := range unanswered {
		before := tr.runID
		send(tr)
		if tr.status != 202 || (before != "" && tr.runID != before) {
			t.Fatalf("%s sent again: %d, run %s (finished as %q)", tr.txn, tr.status, tr.runID, before)
		}
	}
	for _, tr := range unanswered {
		w.waitAll(tr.txn, 1, "completed")
	}
	time.Sleep(time.Second)
	for i := range sent {
		sent[i].status = 202 // each has its run now
	}
	messages("after the unanswered triggers were sent again")
}
