package webhooks_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// verifySignature is an implementation of Standard Webhooks verification
// of its own (not package standardwebhooks): the base64 HMAC-SHA256 of
// "{id}.{timestamp}.{body}" keyed by the base64-decoded secret after
// "whsec_", compared with each "v1," signature of the header. It reports
// whether one matches.
func verifySignature(secret, id, timestamp string, body []byte, header string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(header) {
		if v, ok := strings.CutPrefix(sig, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return true
		}
	}
	return false
}

// received is one request a receiver got.
type received struct {
	ID, Timestamp, Signature string
	Body                     []byte
	At                       time.Time
	// Type and Data are the decoded body's.
	Type      string
	EventTime time.Time
	Data      map[string]any
	Status    int
}

// receiver is a webhook endpoint on loopback: it records every request
// and answers with answer(id, n) (n counts the requests of that id from
// 1); 200 when answer is nil.
type receiver struct {
	URL string

	mu     sync.Mutex
	got    []received
	counts map[string]int
	answer func(id string, n int) int
	srv    *http.Server
	ln     net.Listener
	addr   string
}

func newReceiver(t *testing.T, answer func(id string, n int) int) *receiver {
	r := &receiver{counts: map[string]int{}, answer: answer}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.URL = "http://" + r.addr + "/hook"
	r.serve(ln)
	t.Cleanup(r.stop)
	return r
}

func (r *receiver) serve(ln net.Listener) {
	r.ln = ln
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle)}
	go r.srv.Serve(ln)
}

// stop closes the receiver: connections to it are refused.
func (r *receiver) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.srv.Shutdown(ctx)
}

// restart listens again on the same address.
func (r *receiver) restart(t *testing.T) {
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.serve(ln)
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	rec := received{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"),
		Signature: req.Header.Get("webhook-signature"), Body: body, At: time.Now()}
	var b struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	_ = json.Unmarshal(body, &b)
	rec.Type, rec.EventTime, rec.Data = b.Type, b.Timestamp, b.Data
	r.mu.Lock()
	r.counts[rec.ID]++
	n := r.counts[rec.ID]
	answer := r.answer
	r.mu.Unlock()
	rec.Status = http.StatusOK
	if answer != nil {
		rec.Status = answer(rec.ID, n)
	}
	r.mu.Lock()
	r.got = append(r.got, rec)
	r.mu.Unlock()
	w.WriteHeader(rec.Status)
}

// requests returns what the receiver got so far.
func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// waitFor polls the receiver until done holds for its requests.
func (r *receiver) waitFor(t *testing.T, what string, done func([]received) bool) []received {
	t.Helper()
	var got []received
	testwait.Until(t, "receiver: "+what, func() error {
		if got = r.requests(); !done(got) {
			return fmt.Errorf("got %d requests", len(got))
		}
		return nil
	})
	return got
}

// waitForEverySigned waits until n distinct messages came (retries may
// repeat some) and fails the test unless each request verifies with
// secret.
func (r *receiver) waitForEverySigned(t *testing.T, n int, secret string) {
	t.Helper()
	got := r.waitFor(t, "every message", func(got []received) bool {
		ids := map[string]bool{}
		for _, r := range got {
			ids[r.ID] = true
		}
		return len(ids) == n
	})
	for _, r := range got {
		if !verifySignature(secret, r.ID, r.Timestamp, r.Body, r.Signature) {
			t.Fatalf("signature of %s does not verify", r.ID)
		}
	}
}

// fixture is a service with one tenant, a subscriber ada and an in-app
// channel. h is set when the service runs in this process.
type fixture struct {
	t        *testing.T
	h        *testherald.Herald
	base     string
	internal string
	tenant   string
	key      string
}

func newFixture(t *testing.T, h *testherald.Herald, name string) *fixture {
	t.Helper()
	f := &fixture{t: t, h: h, base: h.URL(), internal: h.InternalToken()}
	f.tenant, f.key = h.Tenant(name)
	f.setUp()
	return f
}

// newRemoteFixture is newFixture for a service at base (a child
// process) whose admin and internal tokens are given.
func newRemoteFixture(t *testing.T, base, admin, internal, name string) *fixture {
	t.Helper()
	f := &fixture{t: t, base: base, internal: internal}
	tn, err := testapi.New(base, admin).CreateTenant(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	f.tenant, f.key = tn.TenantID, tn.APIKey
	f.setUp()
	return f
}

func (f *fixture) setUp() {
	f.call("PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}}, 201)
	f.call("POST", "/v1/channels", map[string]any{"channelKey": "in-app", "config": map[string]any{}}, 201)
}

func startService(t *testing.T, dir string, env map[string]string) *testherald.Herald {
	t.Helper()
	e := map[string]string{"HERALD_WEBHOOK_RETRY_BASE": "100ms"}
	for k, v := range env {
		e[k] = v
	}
	return testherald.Start(t, testherald.Options{DataDir: dir, Env: e})
}

func (f *fixture) call(method, path string, body any, status int) testapi.Response {
	f.t.Helper()
	r, err := testapi.New(f.base, f.key).Send(context.Background(), method, path, body)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.Status != status {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
	}
	return r
}

// webhook creates an endpoint and returns its id and secret.
func (f *fixture) webhook(url string, events ...string) (id, secret string) {
	f.t.Helper()
	var v struct{ WebhookID, Secret string }
	f.call("POST", "/v1/webhooks", map[string]any{"url": url, "events": events}, 201).JSON(f.t, &v)
	return v.WebhookID, v.Secret
}

// deliver sends through POST /v1/deliver and returns the answer.
func (f *fixture) deliver(body map[string]any) (int, map[string]any) {
	f.t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", f.base+"/v1/deliver", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-herald-internal-token", f.internal)
	req.Header.Set("x-herald-tenant-id", f.tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// inApp delivers an in-app message to ada (a delivery.sent) and returns
// its attempt id and message id.
func (f *fixture) inApp(runID string) (attemptID, messageID string) {
	f.t.Helper()
	status, out := f.deliver(map[string]any{"idempotencyKey": runID + ":inbox", "runId": runID, "stepId": "inbox",
		"subscriberId": "ada", "channel": "in_app", "content": map[string]any{"subject": "Hi", "body": "Hello Ada"}})
	if status != 200 || out["status"] != "sent" {
		f.t.Fatalf("deliver: %d %v", status, out)
	}
	return out["attemptId"].(string), out["providerMessageId"].(string)
}

// attempts lists an endpoint's attempts.
func (f *fixture) attempts(id string) []map[string]any {
	f.t.Helper()
	var l struct{ Data []map[string]any }
	f.call("GET", "/v1/webhooks/"+id+"/attempts?limit=500", nil, 200).JSON(f.t, &l)
	return l.Data
}

// atomicInt counts from several goroutines.
type atomicInt struct {
	mu sync.Mutex
	n  int
}

func (a *atomicInt) add() { a.mu.Lock(); a.n++; a.mu.Unlock() }

func (a *atomicInt) get() int { a.mu.Lock(); defer a.mu.Unlock(); return a.n }

func itoa(i int) string { return strconv.Itoa(i) }

// sendToDownReceiver sends n in-app messages whose webhook, subscribed to
// their delivery, points at a receiver that is down: their deliveries
// fail and are retried until recv restarts.
func (f *fixture) sendToDownReceiver(n int) (recv *receiver, hookID, secret string) {
	recv = newReceiver(f.t, nil)
	hookID, secret = f.webhook(recv.URL, events.HookDeliverySent)
	recv.stop()
	for i := range n {
		f.inApp("run_" + itoa(i))
	}
	return recv, hookID, secret
}
