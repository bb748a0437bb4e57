package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// opsWorld is a service with a mixed workload behind it: two tenants, API
// keys (one revoked), subscribers (updated, deleted), topics, subscriptions,
// an SMTP channel with a password (patched), a Bridge registered twice, and
// runs that completed, waited for a signal, were cancelled and failed.
type opsWorld struct {
	t        *testing.T
	dir      string
	h        *testherald.Herald
	logs     *testlog.Buffer
	secrets  map[string]string // name → a value that must never be seen in clear
	tenantA  string
	tenantB  string
	keyA     string
	runs     map[string]string // runId → final status
	workRuns atomic.Int32
}

const opsPassword = "Smtp-Pw-herald-ops-3c9e1f-quartz"

func newOpsWorld(t *testing.T) *opsWorld {
	w := &opsWorld{t: t, dir: t.TempDir(), logs: &testlog.Buffer{}, secrets: map[string]string{}, runs: map[string]string{}}
	for _, k := range []string{"HERALD_NATS_URL", "HERALD_HTTP_ADDR", "HERALD_DATA_DIR", "HERALD_ADMIN_TOKEN", "HERALD_MASTER_KEY"} {
		t.Setenv(k, "")
	}
	w.h = testherald.Start(t, testherald.Options{DataDir: w.dir,
		Logger: slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h := w.h
	must := func(method, path, key string, body any, want ...int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, key, body)
		for _, s := range want {
			if r.Status == s {
				return r
			}
		}
		t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		return r
	}

	// SMTP sink for real deliveries.
	mail := testsmtp.StartCatcher(t, 0)

	// Tenants and keys.
	var keyB string
	w.tenantA, w.keyA = h.Tenant("Acme")
	w.tenantB, keyB = h.Tenant("Beta")
	w.secrets["apiKeyA"], w.secrets["apiKeyB"] = w.keyA, keyB
	var extra struct{ APIKey, Prefix string }
	must("POST", "/v1/api-keys", w.keyA, nil, 201).JSON(t, &extra)
	w.secrets["apiKeyExtra"] = extra.APIKey
	must("POST", "/v1/admin/tenants/"+w.tenantB+"/api-keys", h.AdminToken(), nil, 201).JSON(t, &extra)
	w.secrets["apiKeyRevoked"] = extra.APIKey
	must("DELETE", "/v1/api-keys/"+extra.Prefix, keyB, nil, 204)
	mk, err := os.ReadFile(filepath.Join(w.dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	w.secrets["masterKey"] = strings.TrimSpace(string(mk))
	w.secrets["adminToken"] = h.AdminToken()

	// Audience.
	for i := range 12 {
		id := fmt.Sprintf("user.%02d@acme", i)
		must("PUT", "/v1/subscribers/"+id, w.keyA, map[string]any{
			"contacts": map[string]any{"email": []string{fmt.Sprintf("u%02d@acme.test", i)}}}, 201)
	}
	must("PUT", "/v1/subscribers/user.00@acme", w.keyA, map[string]any{"locale": "fr", "attributes": map[string]any{"plan": "pro"}}, 200)
	must("PUT", "/v1/subscribers/user.01@acme", w.keyA, map[string]any{"contacts": map[string]any{"sms": []string{"+15550001"}}}, 200)
	must("PUT", "/v1/topics/news", w.keyA, map[string]any{"name": "News", "description": "weekly"}, 201)
	must("PUT", "/v1/topics/old", w.keyA, map[string]any{"name": "Old"}, 201)
	for i := range 10 {
		must("PUT", fmt.Sprintf("/v1/subscribers/user.%02d@acme/subscriptions/news", i), w.keyA, nil, 201)
	}
	must("PUT", "/v1/subscribers/user.11@acme/subscriptions/implicit", w.keyA, nil, 201)
	must("DELETE", "/v1/subscribers/user.09@acme/subscriptions/news", w.keyA, nil, 204)
	must("DELETE", "/v1/subscribers/user.10@acme", w.keyA, nil, 204)
	must("DELETE", "/v1/topics/old", w.keyA, nil, 204)
	must("PUT", "/v1/subscribers/b1", keyB, map[string]any{"contacts": map[string]any{"email": []string{"b1@beta.test"}}}, 201)

	// Channels.
	channel := map[string]any{"channelKey": "email-smtp", "config": map[string]any{"host": mail.Host, "port": mail.Port,
		"username": "ops", "password": opsPassword, "fromEmail": "noreply@acme.test", "fromName": "Acme"}}
	must("POST", "/v1/channels", w.keyA, channel, 201)
	must("PATCH", "/v1/channels/email-smtp", w.keyA, map[string]any{"enabled": false}, 200)
	must("PATCH", "/v1/channels/email-smtp", w.keyA, map[string]any{"enabled": true}, 200)
	must("POST", "/v1/channels", keyB, channel, 201)
	must("DELETE", "/v1/channels/email-smtp", keyB, nil, 204)
	w.secrets["smtpPassword"] = opsPassword

	// The Bridge, registered twice (a rotation); the secrets are captured.
	reg := bridge.NewRegistry().MustRegister(
		bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
			if _, err := bridge.Run(ctx, "work", func(context.Context) (int, error) { w.workRuns.Add(1); return 42, nil }); err != nil {
				return err
			}
			_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
				return bridge.SendContent{Subject: "Welcome", Body: "hello " + ctx.Subscriber.SubscriberID}, nil
			})
			return err
		}),
		bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ any) error {
			if _, _, err := bridge.WaitForEvent[any](ctx, "wait", "approved", time.Hour); err != nil {
				return err
			}
			_, err := bridge.Run(ctx, "after", func(context.Context) (string, error) { return "done", nil })
			return err
		}),
		bridge.MustWorkflow("texting", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "sms", "sms", func(context.Context) (bridge.SendContent, error) {
				return bridge.SendContent{Body: "hi"}, nil
			})
			return err
		}),
	)
	type holder struct{ http.Handler }
	var handler atomic.Pointer[holder]
	handler.Store(&holder{http.NotFoundHandler()})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		handler.Load().ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	for i := range 2 {
		var b struct{ SigningSecret string }
		must("PUT", "/v1/bridge", w.keyA, map[string]string{"webhookUrl": srv.URL}, 200).JSON(t, &b)
		w.secrets[fmt.Sprintf("signingSecret%d", i)] = b.SigningSecret
		handler.Store(&holder{bridge.Serve(reg, bridge.Options{SigningKey: b.SigningSecret})})
	}
	var bb struct{ SigningSecret string }
	must("PUT", "/v1/bridge", keyB, map[string]string{"webhookUrl": srv.URL + "/beta"}, 200).JSON(t, &bb)
	w.secrets["signingSecretB"] = bb.SigningSecret // Beta's calls are refused (401): its runs fail

	// Triggers and runs.
	trigger := func(key string, body map[string]any) []string {
		t.Helper()
		var res struct{ Runs []struct{ RunID string } }
		must("POST", "/v1/events", key, body, 202).JSON(t, &res)
		var ids []string
		for _, r := range res.Runs {
			ids = append(ids, r.RunID)
		}
		return ids
	}
	for _, id := range trigger(w.keyA, map[string]any{"workflowId": "welcome", "to": map[string]any{"topics": []string{"news"}},
		"payload": map[string]any{"campaign": "spring"}, "transactionId": "txn-news"}) {
		w.runs[id] = "completed"
	}
	signalled := trigger(w.keyA, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "user.00@acme"}})[0]
	cancelled := trigger(w.keyA, map[string]any{"workflowId": "approval", "to": map[string]any{"subscriberId": "user.01@acme"}})[0]
	failed := trigger(w.keyA, map[string]any{"workflowId": "texting", "to": map[string]any{"subscriberId": "user.02@acme"}})[0]
	refused := trigger(keyB, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "b1"}})[0]
	h.WaitRun(w.keyA, signalled, "waiting")
	must("POST", "/v1/events/"+signalled+"/signal", w.keyA, map[string]any{"event": "approved", "payload": map[string]any{"by": "ada"}}, 202)
	h.WaitRun(w.keyA, cancelled, "waiting")
	must("POST", "/v1/runs/"+cancelled+"/cancel", w.keyA, nil, 202)
	w.runs[signalled], w.runs[cancelled], w.runs[failed] = "completed", "cancelled", "failed"
	for id, status := range w.runs {
		h.WaitRun(w.keyA, id, status)
	}
	h.WaitRun(keyB, refused, "failed")
	must("GET", "/v1/runs?transactionId=txn-news", w.keyA, nil, 200)
	if n := int(w.workRuns.Load()); n < 9 {
		t.Fatalf("the welcome workflow's run step ran %d times for 9 runs", n)
	}
	if mail.Inbox().Len() != 9 {
		t.Fatalf("%d messages delivered, want 9", mail.Inbox().Len())
	}
	w.settle()
	return w
}

// settle waits until the log stops growing (nothing is in flight) and the
// projections hold all of it.
func (w *opsWorld) settle() {
	w.t.Helper()
	ctx := context.Background()
	var last uint64
	stable := 0
	for stable < 5 {
		seq, err := w.h.Log().LastSeq(ctx)
		if err != nil {
			w.t.Fatal(err)
		}
		if seq == last {
			stable++
		} else {
			stable, last = 0, seq
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := w.h.Store().WaitCaughtUp(ctx, w.h.Log()); err != nil {
		w.t.Fatal(err)
	}
}

func runAudit(t *testing.T, args ...string) ([]byte, []events.Line) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), append([]string{"audit"}, args...), &out, &errOut); err != nil {
		t.Fatalf("herald audit %v: %v (%s)", args, err, errOut.Bytes())
	}
	var lines []events.Line
	for _, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var a events.Line
		if err := json.Unmarshal(l, &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		lines = append(lines, a)
	}
	return out.Bytes(), lines
}

func parseReport(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = strings.Fields(v)[0]
		}
	}
	return m
}

// TestAuditAndRebuild drives a mixed workload, then replays the log
// through the running server and straight from the data dir (the same
// events, no secret in clear, filters obeyed), and rebuilds the
// projections from the log: the rebuilt file's checksum equals the live
// projections'.
func TestAuditAndRebuild(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a service, a Bridge and an SMTP sink")
	}
	w := newOpsWorld(t)
	ctx := context.Background()
	lastSeq, err := w.h.Log().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// 1. Through the running server (the data dir is locked by it).
	raw, lines := runAudit(t, "--data", w.dir, "--http", w.h.Addr())
	if uint64(len(lines)) != lastSeq {
		t.Fatalf("audit printed %d events, the log holds %d", len(lines), lastSeq)
	}
	types := map[string]int{}
	for i, l := range lines {
		if l.Seq != uint64(i+1) || l.ID == "" || l.Type == "" || l.TenantID == "" || l.At.IsZero() || !strings.HasPrefix(l.Subject, "ev.") {
			t.Fatalf("line %d: %+v", i, l)
		}
		types[l.Type]++
		if l.Type == "ChannelConfigured" && !bytes.Contains(l.Data, []byte(`"v1:`)) {
			t.Errorf("ChannelConfigured without a sealed value: %s", l.Data)
		}
	}
	for _, want := range []string{"TenantCreated", "APIKeyCreated", "APIKeyRevoked", "SubscriberUpserted", "SubscriberDeleted",
		"TopicUpserted", "TopicDeleted", "SubscriberSubscribed", "ChannelConfigured", "ChannelUpdated", "ChannelDeleted",
		"BridgeConfigured", "TriggerAccepted", "RunStarted", "StepCompleted", "RunCompleted", "RunFailed", "RunCancelled",
		"SignalReceived", "DeliverySent"} {
		if types[want] == 0 {
			t.Errorf("the audit holds no %s event (types: %v)", want, types)
		}
	}
	if found := testlog.Leaks(raw, w.secrets); len(found) > 0 {
		t.Fatalf("the audit output holds %v in clear", found)
	}

	// Filters.
	_, beta := runAudit(t, "--data", w.dir, "--http", w.h.Addr(), "--tenant", w.tenantB)
	for _, l := range beta {
		if l.TenantID != w.tenantB {
			t.Fatalf("--tenant %s printed an event of %s", w.tenantB, l.TenantID)
		}
	}
	if len(beta) == 0 || len(beta) >= len(lines) {
		t.Fatalf("--tenant: %d of %d events", len(beta), len(lines))
	}
	_, done := runAudit(t, "--data", w.dir, "--http", w.h.Addr(), "--type", "RunCompleted,RunCancelled")
	if len(done) != types["RunCompleted"]+types["RunCancelled"] || len(done) != 11 {
		t.Fatalf("--type: %d events, want 11", len(done))
	}
	mid := lines[len(lines)/2].At
	_, since := runAudit(t, "--data", w.dir, "--http", w.h.Addr(), "--since", mid.Format(time.RFC3339Nano))
	if len(since) == 0 || since[0].At.Before(mid) {
		t.Fatalf("--since: %d events", len(since))
	}
	for _, l := range since {
		if l.At.Before(mid) {
			t.Fatalf("--since %v printed an event at %v", mid, l.At)
		}
	}

	// --follow sees an event appended after it started, and ends when
	// interrupted.
	followCtx, stopFollow := context.WithCancel(ctx)
	followOut := &testlog.Buffer{}
	followDone := make(chan error, 1)
	go func() {
		followDone <- run(followCtx, []string{"audit", "--data", w.dir, "--http", w.h.Addr(), "--follow",
			"--tenant", w.tenantA, "--type", "TopicUpserted"}, followOut, io.Discard)
	}()
	time.Sleep(200 * time.Millisecond)
	if r := w.h.Do("PUT", "/v1/topics/followed", w.keyA, map[string]any{"name": "Followed"}); r.Status != 201 {
		t.Fatalf("PUT topic: %d %s", r.Status, r.Body)
	}
	testwait.For(t, "--follow to print the new topic", func() bool {
		return bytes.Contains(followOut.Bytes(), []byte(eventlogToken("followed")))
	})
	stopFollow()
	if err := <-followDone; err != nil {
		t.Fatalf("--follow ended with %v", err)
	}

	// A rebuild needs the server stopped.
	err = run(ctx, []string{"rebuild", "--data", w.dir}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("rebuild beside a running server: %v", err)
	}

	// 2. The live checksum, then stop the server.
	w.settle()
	live, err := w.h.Store().Checksum()
	if err != nil {
		t.Fatal(err)
	}
	lastSeq, _ = w.h.Log().LastSeq(ctx)
	w.h.Stop()

	// 3. herald rebuild reproduces the live projections.
	var out bytes.Buffer
	began := time.Now()
	if err := run(ctx, []string{"rebuild", "--data", w.dir}, &out, io.Discard); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	rep := parseReport(t, out.String())
	t.Logf("rebuild of %s events: %v (whole command %v)", rep["events"], rep["took"], time.Since(began))
	if rep["checksum"] != live {
		t.Fatalf("rebuilt checksum %s, live %s\n%s", rep["checksum"], live, out.String())
	}
	if rep["previous"] != live {
		t.Fatalf("previous checksum %s, live %s", rep["previous"], live)
	}
	if rep["events"] != fmt.Sprint(lastSeq) {
		t.Fatalf("rebuild reports %s events, the log holds %d", rep["events"], lastSeq)
	}

	// 4. Straight from the data dir: the same events as through the server.
	offRaw, offLines := runAudit(t, "--data", w.dir)
	if uint64(len(offLines)) != lastSeq || !bytes.HasPrefix(offRaw, raw) {
		t.Fatalf("offline audit: %d events (want %d); same prefix as through the server: %v",
			len(offLines), lastSeq, bytes.HasPrefix(offRaw, raw))
	}
	if found := testlog.Leaks(offRaw, w.secrets); len(found) > 0 {
		t.Fatalf("the offline audit output holds %v in clear", found)
	}
	_, offBeta := runAudit(t, "--data", w.dir, "--tenant", w.tenantB)
	if len(offBeta) != len(beta) {
		t.Fatalf("offline --tenant: %d events, through the server %d", len(offBeta), len(beta))
	}

	// 5. The logs never held a secret either (the admin token is written
	// nowhere but its token file), and request
	// lines name the route template, the tenant, the run, the transaction.
	if found := testlog.Leaks(w.logs.Bytes(), w.secrets); len(found) > 0 {
		t.Fatalf("the service logs hold %v in clear", found)
	}
	var sawRun, sawTxn bool
	for _, l := range bytes.Split(w.logs.Bytes(), []byte("\n")) {
		var rec map[string]any
		if json.Unmarshal(l, &rec) != nil || rec["msg"] != "request" {
			continue
		}
		if rec["route"] == "/v1/runs/{runId}" && rec["tenant"] == w.tenantA && rec["run"] != nil {
			sawRun = true
		}
		if rec["route"] == "/v1/runs" && rec["transaction"] == "txn-news" && rec["tenant"] == w.tenantA {
			sawTxn = true
		}
	}
	if !sawRun || !sawTxn {
		t.Fatalf("no request log line with route, tenant and run (%v) or transaction (%v)", sawRun, sawTxn)
	}

	// 6. The service starts on the rebuilt file and serves from it.
	h2 := testherald.Start(t, testherald.Options{DataDir: w.dir})
	if r := h2.Do("GET", "/v1/topics/news", w.keyA, nil); r.Status != 200 || !bytes.Contains(r.Body, []byte(`"subscriberCount":9`)) {
		t.Fatalf("after rebuild: GET /v1/topics/news: %d %s", r.Status, r.Body)
	}
	if sum, _ := h2.Store().Checksum(); sum != live {
		t.Fatalf("restarted on the rebuilt file: checksum %s, want %s", sum, live)
	}
}

// eventlogToken is how an id appears in a subject.
func eventlogToken(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// The tools need no master key, even against a cluster: they open no
// secret. A master key that is set must still parse.
func TestToolConfigNeedsNoMasterKey(t *testing.T) {
	t.Setenv("HERALD_NATS_URL", "nats://127.0.0.1:4222")
	t.Setenv("HERALD_MASTER_KEY", "")
	if _, err := toolConfig(service.Flags{}); err != nil {
		t.Fatalf("tool config without a master key: %v", err)
	}
	t.Setenv("HERALD_MASTER_KEY", "short")
	if _, err := toolConfig(service.Flags{}); err == nil || !strings.Contains(err.Error(), "HERALD_MASTER_KEY") {
		t.Fatalf("a bad master key: %v", err)
	}
}
